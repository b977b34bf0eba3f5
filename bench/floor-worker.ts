import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import { stubByName } from "../src/core/object-ids";
import { SECURITY_HEADERS } from "../src/core/security-headers";

/**
 * The floor for designs that call Durable Objects per request: the baseline's bare Hono Worker
 * plus one (`/rpc1`) or two (`/rpc2`) calls to a trivial Durable Object method per request — an
 * in-memory counter per client address, like a rate limiter with no logic. Whatever the
 * service does beyond these calls is its own cost; the calls themselves are the runtime's.
 * Ids are kept per isolate exactly as the service keeps them (`stubByName`), so the floor
 * is what the service's own technique could reach, not a slower way of calling.
 */
export class Counter extends DurableObject {
  private count = 0;

  hit(limit: number): { allowed: boolean; limit: number; remaining: number; resetMs: number } {
    this.count += 1;
    return { allowed: true, limit, remaining: limit - 1, resetMs: 0 };
  }
}

/**
 * The fan-out floor (`npm run bench:ws`): a trivial object that holds hibernated sockets and, when
 * asked, sends one fixed text to every one of them — no parsing, no book, no relay. What the
 * service spends per delivered message beyond this is its own cost.
 */
export class Fanout extends DurableObject {
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() === "websocket") {
      const { 0: client, 1: server } = new WebSocketPair();
      this.ctx.acceptWebSocket(server);
      return new Response(null, { status: 101, webSocket: client });
    }
    const { text, times, everyMs } = (await request.json()) as { text: string; times: number; everyMs: number };
    for (let i = 0; i < times; i++) {
      for (const ws of this.ctx.getWebSockets()) ws.send(text);
      if (everyMs > 0) await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    return Response.json({ sockets: this.ctx.getWebSockets().length });
  }
}

interface Env {
  COUNTER: DurableObjectNamespace<Counter>;
  FANOUT: DurableObjectNamespace<Fanout>;
}

/** Calls made since the isolate started, as the service counts its own (per client, per market); read at `/calls`. */
const calls = { guard: 0, market: 0 };
const body = { symbol: "BTCUSDT", lastPrice: "97000.10", volume24h: "1.00000" };
const app = new Hono<{ Bindings: Env }>();
const client = (c: { req: { header(name: string): string | undefined } }) => c.req.header("CF-Connecting-IP") ?? "unknown";

app.get("/rpc1", async (c) => {
  calls.guard += 1;
  await stubByName(c.env.COUNTER, `ip:${client(c)}`).hit(10);
  return c.json(body);
});
app.get("/rpc2", async (c) => {
  calls.guard += 1;
  calls.market += 1;
  await stubByName(c.env.COUNTER, `ip:${client(c)}`).hit(10);
  await stubByName(c.env.COUNTER, "market:BTCUSDT").hit(1);
  return c.json(body);
});

/**
 * The baseline's body with the headers a ticker answer must carry (the security headers on every
 * response, RateLimit-*, a request id, the copy's freshness) and no call: what those headers cost
 * the runtime here, which no route of the service can go below.
 */
app.get("/headers", (c) =>
  c.json(body, 200, {
    ...SECURITY_HEADERS,
    "RateLimit-Limit": "10",
    "RateLimit-Remaining": "9",
    "RateLimit-Reset": "1",
    "X-Request-Id": crypto.randomUUID(),
    "Cache-Control": "public, max-age=0, stale-if-error=5",
    Age: "0",
    "X-As-Of": String(Date.now()),
  }),
);

app.get("/calls", (c) => c.json({ ...calls }));
/** Sockets of the fan-out floor, one shard per `shard` (as the service spreads its clients). */
app.get("/ws", (c) => stubByName(c.env.FANOUT, `shard-${c.req.query("shard") ?? "0"}`).fetch(c.req.raw));
app.post("/fanout", (c) => stubByName(c.env.FANOUT, `shard-${c.req.query("shard") ?? "0"}`).fetch(c.req.raw));

export default app;
