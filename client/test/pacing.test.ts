import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffDelay, type Clock, MarketDataClient, MarketDataError, RECONNECT_BACKOFF, reconnectDelay, retryAfterMs, sign } from "../src/index.js";

/** An injected clock: `sleep` records the wait and moves time on at once. */
class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(public time = 1_763_800_000_000) {}
  now(): number {
    return this.time;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.time += ms;
  }
}

interface Seen {
  method: string;
  url: string;
  headers: Headers;
  at: number;
}

/** A scripted server: answers in order, and remembers what was sent and when (by the fake clock). */
function scripted(clock: FakeClock, answers: (() => Response)[]): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    seen.push({ method: init?.method ?? "GET", url: String(input), headers: new Headers(init?.headers), at: clock.now() });
    const answer = answers.shift();
    if (!answer) throw new Error(`unexpected request ${init?.method} ${input}`);
    return answer();
  };
  return { fetch: fetcher as typeof fetch, seen };
}

const problem =
  (status: number, code: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify({ type: "about:blank", title: code, status, code, detail: `${code} detail`, requestId: "req-1", ...extra }), {
      status,
      headers: { "Content-Type": "application/problem+json", ...headers },
    });
const ok =
  (body: unknown, headers: Record<string, string> = {}) =>
  () =>
    Response.json(body, { headers });
const limited = { "RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "1" };

describe("the client's pacing and back-off", () => {
  it("back-off is jittered between half and all of the doubling ceiling, and never above the cap", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const delay = backoffDelay(attempt, { baseMs: 250, maxMs: 8000, random: () => r });
        const ceiling = Math.min(8000, 250 * 2 ** (attempt - 1));
        expect(delay, `attempt ${attempt}`).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(delay, `attempt ${attempt}`).toBeLessThanOrEqual(ceiling);
      }),
    );
  });

  it("a stream's reconnect waits uniformly over all of the doubling ceiling (1 s … 5 s by default), never above it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const delay = reconnectDelay(attempt, { ...RECONNECT_BACKOFF, random: () => r });
        const ceiling = Math.min(RECONNECT_BACKOFF.maxMs, RECONNECT_BACKOFF.baseMs * 2 ** (attempt - 1));
        expect(delay, `attempt ${attempt}`).toBeGreaterThanOrEqual(0);
        expect(delay, `attempt ${attempt}`).toBeLessThanOrEqual(ceiling);
        expect(delay, `attempt ${attempt} follows the draw`).toBe(Math.round(ceiling * r));
      }),
    );
  });

  it("a million clients dropped at once come back spread evenly over the first second, not together", () => {
    let seed = 42;
    const random = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 2 ** 32;
    };
    const perTenth = new Array(10).fill(0);
    const clients = 1_000_000;
    for (let i = 0; i < clients; i++) perTenth[Math.min(9, Math.floor(reconnectDelay(1, { ...RECONNECT_BACKOFF, random }) / 100))] += 1;
    for (const [tenth, n] of perTenth.entries()) {
      expect(n, `${tenth * 100}–${tenth * 100 + 100} ms: ${n} of a million`).toBeGreaterThan(clients / 10 - clients / 100);
      expect(n, `${tenth * 100}–${tenth * 100 + 100} ms: ${n} of a million`).toBeLessThan(clients / 10 + clients / 100);
    }
  });

  it("reads the wait from retryAfterMs first, then Retry-After in seconds or as a date", () => {
    const now = Date.parse("2026-11-23T12:00:00Z");
    expect(retryAfterMs(new Headers({ "Retry-After": "2" }), { retryAfterMs: 1234 }, now)).toBe(1234);
    expect(retryAfterMs(new Headers({ "Retry-After": "2" }), {}, now)).toBe(2000);
    expect(retryAfterMs(new Headers({ "Retry-After": "Mon, 23 Nov 2026 12:00:05 GMT" }), undefined, now)).toBe(5000);
    expect(retryAfterMs(new Headers(), {}, now)).toBeUndefined();
  });

  it("a 429 on a GET waits exactly what the service asked (retryAfterMs, else Retry-After), then succeeds", async () => {
    const clock = new FakeClock();
    const { fetch, seen } = scripted(clock, [
      problem(429, "RATE_LIMITED", { retryAfterMs: 1234 }, { ...limited, "Retry-After": "2" }),
      problem(429, "RATE_LIMITED", {}, { ...limited, "Retry-After": "3" }),
      ok({ serverTime: 1 }, { "RateLimit-Limit": "10", "RateLimit-Remaining": "9", "RateLimit-Reset": "1" }),
    ]);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock });
    expect(await client.getServerTime()).toEqual({ serverTime: 1 });
    expect(clock.sleeps, "the waits before the retries").toEqual([1234, 3000]);
    expect(seen.map((s) => s.at - seen[0]!.at)).toEqual([0, 1234, 4234]);
  });

  it("after an answer with RateLimit-Remaining 0, the next call of that scope waits for RateLimit-Reset before it goes out", async () => {
    const clock = new FakeClock();
    const { fetch, seen } = scripted(clock, [ok({ serverTime: 1 }, limited), ok({ serverTime: 2 }, limited)]);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock });
    await client.getServerTime();
    await client.getServerTime();
    expect(seen[1]!.at - seen[0]!.at).toBe(1000);
    expect(client.pacer.state("public")).toMatchObject({ limit: 10, remaining: 0 });
  });

  it("a 5xx or a network failure on a GET is retried with growing jittered waits, at most maxRetries times, then thrown as a typed problem", async () => {
    const clock = new FakeClock();
    const { fetch, seen } = scripted(clock, [
      problem(503, "UNAVAILABLE"),
      () => {
        throw new TypeError("fetch failed");
      },
      problem(500, "INTERNAL_ERROR"),
      problem(503, "UNAVAILABLE", {}, { "X-Request-Id": "req-9" }),
    ]);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock, maxRetries: 3, backoff: { random: () => 0.999999 } });
    const error = await client.getTicker({ pair: "BTCUSDT" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MarketDataError);
    expect(error).toMatchObject({ status: 503, code: "UNAVAILABLE", detail: "UNAVAILABLE detail", requestId: "req-1" });
    expect(seen).toHaveLength(4);
    expect(clock.sleeps).toEqual([250, 500, 1000]);
  });

  it("a POST is never retried: a 429 or 503 on ingest is thrown at once", async () => {
    for (const answer of [problem(429, "RATE_LIMITED", { retryAfterMs: 10 }, limited), problem(503, "UNAVAILABLE")]) {
      const clock = new FakeClock();
      const { fetch, seen } = scripted(clock, [answer]);
      const client = new MarketDataClient({
        baseUrl: "http://service",
        fetch,
        clock,
        apiKey: "mk_0123456789abcdef01234567",
        secret: "s3cr3t",
        syncTime: false,
      });
      await expect(client.ingestMarketData({ symbol: "BTCUSDT", trades: [] } as never)).rejects.toBeInstanceOf(MarketDataError);
      expect(seen).toHaveLength(1);
      expect(clock.sleeps).toEqual([]);
    }
  });

  it("signs with the server's time: measured from /api/time at the round trip's midpoint, and re-signed once after TIMESTAMP_OUT_OF_WINDOW", async () => {
    const clock = new FakeClock(1_000_000);
    const secret = "s3cr3t";
    const answers = [
      () => {
        clock.time += 100; // a 100 ms round trip; the server read its clock halfway
        return Response.json({ serverTime: 1_000_000 + 50 + 7_000 });
      },
      problem(401, "TIMESTAMP_OUT_OF_WINDOW", { serverTime: 1_000_100 + 9_000 }),
      ok({ symbol: "BTCUSDT" }),
    ];
    const { fetch, seen } = scripted(clock, answers);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock, apiKey: "mk_0123456789abcdef01234567", secret });
    await client.signedGetTicker({ symbol: "BTCUSDT" });
    expect(seen.map((s) => new URL(s.url).pathname)).toEqual(["/api/time", "/v1/ticker/24hr", "/v1/ticker/24hr"]);
    const [first, second] = [seen[1]!, seen[2]!];
    expect(first.headers.get("X-TIMESTAMP")).toBe(String(1_000_100 + 7_000));
    expect(second.headers.get("X-TIMESTAMP")).toBe(String(1_000_100 + 9_000));
    for (const request of [first, second]) {
      const timestamp = Number(request.headers.get("X-TIMESTAMP"));
      expect(request.headers.get("X-SIGNATURE")).toBe(await sign(secret, { timestamp, method: "GET", requestTarget: "/v1/ticker/24hr?symbol=BTCUSDT" }));
      expect(request.headers.get("X-API-KEY")).toBe("mk_0123456789abcdef01234567");
    }
  });

  it("concurrent signed calls share one server-time measurement and all sign with it", async () => {
    const clock = new FakeClock(1_000_000);
    const { fetch, seen } = scripted(clock, [ok({ serverTime: 1_000_000 + 4_000 }), ok({ symbol: "BTCUSDT" }), ok({ symbol: "ETHUSDT" })]);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock, apiKey: "mk_0123456789abcdef01234567", secret: "s3cr3t" });
    await Promise.all([client.signedGetTicker({ symbol: "BTCUSDT" }), client.signedGetTicker({ symbol: "ETHUSDT" })]);
    expect(seen.map((s) => new URL(s.url).pathname)).toEqual(["/api/time", "/v1/ticker/24hr", "/v1/ticker/24hr"]);
    expect(
      seen.slice(1).map((s) => s.headers.get("X-TIMESTAMP")),
      "both signed on the server's clock",
    ).toEqual([String(1_004_000), String(1_004_000)]);
  });

  it("a second TIMESTAMP_OUT_OF_WINDOW is thrown, not retried in a loop; other 4xx are thrown at once with their code", async () => {
    const clock = new FakeClock();
    const { fetch, seen } = scripted(clock, [
      problem(401, "TIMESTAMP_OUT_OF_WINDOW", { serverTime: 5 }),
      problem(401, "TIMESTAMP_OUT_OF_WINDOW", { serverTime: 5 }),
      problem(404, "UNKNOWN_SYMBOL"),
    ]);
    const client = new MarketDataClient({ baseUrl: "http://service", fetch, clock, apiKey: "mk_0123456789abcdef01234567", secret: "x", syncTime: false });
    await expect(client.signedGetTicker({ symbol: "BTCUSDT" })).rejects.toMatchObject({ code: "TIMESTAMP_OUT_OF_WINDOW", status: 401 });
    await expect(client.getTicker({ pair: "DOGEUSDT" })).rejects.toMatchObject({ code: "UNKNOWN_SYMBOL", status: 404 });
    expect(seen).toHaveLength(3);
  });
});
