import type { Context } from "hono";
import { clientPrincipal } from "../access/client-address";
import { openEdgeConnection } from "../access/edge-connection";
import { SlidingWindow } from "../access/sliding-window";
import { ByteWindow } from "../core/byte-window";
import { askInner, takeInner } from "../core/inner-answers";
import { intSetting } from "../core/settings";
import type { AppEnv } from "../http/env";
import { logFailure } from "../logs/log";
import { MAX_CONNECTIONS_PER_PRINCIPAL } from "../streams/protocol";
import { BinanceError } from "./errors";
import { answerFrame, MAX_REQUEST_BYTES, type RequestId, rateLimitsOf, readRequest, requestIdIn, resultFrame, wsApiRequests } from "./ws-api";
import { wsApiLifetime } from "./ws-api-lifetime";

/** The app itself: each request of a connection is answered by the REST dialect's route. */
export type DialectFetch = (request: Request) => Promise<Response>;

/** Requests a connection may have waiting for their answer; one more is refused (-1003) rather than queued. */
export const MAX_WAITING_REQUESTS = 50;
/**
 * Answer bytes an address's connections may be sent in any minute, together: past it a request is
 * answered 429 -1003 (a small frame) instead. The runtime does not say what a client has not read
 * (`bufferedAmount` is 0 on workerd), so this bounds what a client that stops reading makes the
 * isolate hold: 4 MiB a minute per address, however many of its five connections it opens here,
 * about 13 books of 5,000 levels a side (Binance's weights allow about 24 deep books a minute to an
 * address). `WS_API_ANSWER_BYTES` sets it (the tests' smaller).
 */
const MAX_ANSWER_BYTES_PER_MINUTE = 4 * 1024 * 1024;

/** Frames a connection may send in any second, valid or not; more are answered -1003 and never dispatched. */
export const MAX_FRAMES_PER_SECOND = 10;

/** Each address's answer window in this isolate, shared by its open connections; dropped with the last. */
const answerWindows = new Map<string, { window: ByteWindow; connections: number }>();

/** The answer window of `address`, one more connection holding it; `release` once that connection closes. */
function answerWindowOf(address: string, most: number): { window: ByteWindow; release: () => void } {
  let held = answerWindows.get(address);
  if (!held) answerWindows.set(address, (held = { window: new ByteWindow(most, 60_000), connections: 0 }));
  held.connections += 1;
  const entry = held;
  let released = false;
  return {
    window: entry.window,
    release: () => {
      if (released) return;
      released = true;
      entry.connections -= 1;
      if (entry.connections === 0 && answerWindows.get(address) === entry) answerWindows.delete(address);
    },
  };
}

/**
 * `GET /binance/ws-api/v3` (docs/binance.md#websocket-api): the connection is held by this
 * isolate (request/response needs no shard: nothing is pushed to it), counted against the
 * client address's five connections with its streams by a lease of its guard, which it confirms
 * every 20 s and returns on close. Each request is the REST dialect's endpoint asked as a request
 * from the same address (`dispatch`): the same answer, the same reads and edge copies, counted
 * once against the address's 10 a second — in object calls, what the REST request costs (none
 * when the edge copy is fresh), plus one guard call per connection every 20 s.
 *
 * Answers go in the order the requests came. Public only: a connection is its address's, so there
 * is no key whose rights could end while it is open.
 */
export async function wsApiUpgrade(c: Context<AppEnv>, dispatch: DialectFetch): Promise<Response> {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket")
    throw new BinanceError("INVALID_PARAMETER", "This is a WebSocket endpoint: connect with Upgrade: websocket.");
  const connection = await openEdgeConnection(c);
  if (!connection) {
    throw new BinanceError(
      "TOO_MANY_REQUESTS",
      `Too many connections: ${MAX_CONNECTIONS_PER_PRINCIPAL} per client address, streams and WebSocket API together (docs/limits.md#stream-connections).`,
    );
  }
  const url = new URL(c.req.url);
  const most = intSetting(
    (c.env as unknown as { WS_API_ANSWER_BYTES?: string }).WS_API_ANSWER_BYTES,
    1,
    MAX_ANSWER_BYTES_PER_MINUTE,
    MAX_ANSWER_BYTES_PER_MINUTE,
  );
  const answered = answerWindowOf(clientPrincipal(c.req.raw), most);
  const { client, server } = connection;
  const api = new WsApiConnection(server, connection, dispatch, answered.window, most, {
    origin: url.origin,
    address: c.req.header("CF-Connecting-IP"),
    rateLimitsByDefault: url.searchParams.get("returnRateLimits") !== "false",
    limits: rateLimitsOf(new Headers(c.get("rateLimitHeaders") ?? {})),
  });
  server.addEventListener("message", (event) => api.take(event.data));
  const stop = wsApiLifetime(c, server, (text) => api.send(text));
  server.addEventListener("close", () => {
    stop();
    answered.release();
    try {
      server.close(1000);
    } catch {
      // already closed
    }
  });
  server.addEventListener("error", () => {
    stop();
    answered.release();
  });
  return new Response(null, { status: 101, webSocket: client });
}

type RateLimits = ReturnType<typeof rateLimitsOf>;

/** One connection's requests, answered one after another (answers keep the requests' order) within its frames a second and its address's bytes a minute. */
export class WsApiConnection {
  private waiting = 0;
  private turn: Promise<void> = Promise.resolve();
  private readonly frames = new SlidingWindow(MAX_FRAMES_PER_SECOND, 1_000);
  /**
   * The address's count as last answered (the upgrade's, then each request's): what an answer
   * that asked nothing of the limiter (a frame refused on arrival, one not read) reports.
   */
  private lastLimits: RateLimits;

  constructor(
    private readonly server: WebSocket,
    private readonly connection: { readonly ended: boolean },
    private readonly dispatch: DialectFetch,
    private readonly answered: ByteWindow,
    private readonly most: number,
    private readonly asked: { origin: string; address: string | undefined; rateLimitsByDefault: boolean; limits: RateLimits },
  ) {
    this.lastLimits = asked.limits;
  }

  private limits(asked?: boolean): RateLimits | undefined {
    return (asked ?? this.asked.rateLimitsByDefault) ? this.lastLimits : undefined;
  }

  /** Sends an answer within the address's bytes a minute; past them, the request is refused. */
  send(frame: string, id: RequestId = null): void {
    if (this.connection.ended) return;
    if (this.answered.take(frame.length, Date.now())) this.server.send(frame);
    else {
      const msg = `More than ${this.most} bytes of answers in a minute to this address's connections: ask for less (a smaller limit) or wait.`;
      this.server.send(answerFrame(id, 429, { code: -1003, msg }, this.limits()));
    }
  }

  /**
   * A frame refused on arrival, before anything of it is kept: past the connection's frames a
   * second, binary, oversized, or behind too many waiting requests. Every frame counts, valid or not.
   */
  private refusalOf(data: unknown): string | undefined {
    const id = () => (typeof data === "string" && data.length <= MAX_REQUEST_BYTES ? requestIdIn(data) : null);
    if (!this.frames.admit(Date.now()).allowed)
      return answerFrame(id(), 429, { code: -1003, msg: `More than ${MAX_FRAMES_PER_SECOND} frames a second on this connection.` }, this.limits(), 1_000);
    if (typeof data !== "string") return answerFrame(null, 400, { code: -1100, msg: "Malformed request: a request is a JSON text frame." }, this.limits());
    if (data.length > MAX_REQUEST_BYTES) return answerFrame(null, 400, { code: -1100, msg: `A request is at most ${MAX_REQUEST_BYTES} bytes.` }, this.limits());
    if (this.waiting >= MAX_WAITING_REQUESTS)
      return answerFrame(
        id(),
        429,
        { code: -1003, msg: `More than ${MAX_WAITING_REQUESTS} requests wait for their answers on this connection.` },
        this.limits(),
      );
    return undefined;
  }

  /** A frame from the client: refused, or queued behind the answers before it. */
  take(data: unknown): void {
    const refusal = this.refusalOf(data);
    // A refusal goes in its place among the answers while few wait; at once when the queue is full (it holds no more).
    if (refusal !== undefined && this.waiting >= MAX_WAITING_REQUESTS) {
      this.send(refusal);
      return;
    }
    this.waiting += 1;
    this.turn = this.turn.then(async () => {
      try {
        if (refusal !== undefined) this.send(refusal);
        else {
          const { frame, id } = await this.answer(data as string);
          this.send(frame, id);
        }
      } catch (error) {
        logFailure("ws-api request failed", { error });
        const id = requestIdIn(data as string);
        this.send(answerFrame(id, 503, { code: -1001, msg: "Internal error; unable to process your request. Please try again." }, this.limits()), id);
      } finally {
        this.waiting -= 1;
      }
    });
  }

  /** A request asked of the REST dialect's route, from the same address; its answer as a frame. */
  private async answer(text: string): Promise<{ frame: string; id: RequestId }> {
    const request = readRequest(text);
    if ("error" in request)
      return { frame: answerFrame(request.id, request.error.status, { code: request.error.code, msg: request.error.msg }, this.limits()), id: request.id };
    const query = request.query.toString();
    const rest = new Request(`${this.asked.origin}/binance/api/v3/${request.path}${query ? `?${query}` : ""}`, {
      headers: this.asked.address ? { "CF-Connecting-IP": this.asked.address } : {},
    });
    wsApiRequests.add(rest);
    askInner(rest);
    const response = await this.dispatch(rest);
    const handed = takeInner(rest);
    const counted = rateLimitsOf(response.headers);
    if (counted.length > 0) this.lastLimits = counted;
    const limits = this.limits(request.returnRateLimits);
    // A 200 is the route's JSON text as written (handed over in memory, or its body): embedded as
    // it is, not parsed and written again.
    if (response.status === 200 && response.headers.get("Content-Type")?.startsWith("application/json"))
      return { frame: resultFrame(request.id, handed ?? (await response.text()), limits), id: request.id };
    const body = await response.json().catch(() => null);
    const retryAfter = Number(response.headers.get("Retry-After"));
    const retryMs = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined;
    return { frame: answerFrame(request.id, response.status, body, limits, retryMs), id: request.id };
  }
}
