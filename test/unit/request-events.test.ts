import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_KINDS_HELD, type RequestEvent, RequestEvents } from "../../src/metrics/request-events";

/** Analytics Engine's points as written (the binding drops them locally: its write is all this code uses). */
const recording = () => {
  const points: { indexes?: string[]; blobs?: string[]; doubles?: number[] }[] = [];
  return { points, writeDataPoint: (point: (typeof points)[number]) => points.push(point) };
};

afterEach(() => {
  vi.useRealTimers();
});

const request = fc.record({
  route: fc.constantFrom("/api/ticker/:pair", "/api/orderbook/:pair", "/binance/api/v3/depth"),
  method: fc.constantFrom("GET", "POST"),
  status: fc.constantFrom(200, 400, 429),
  code: fc.constantFrom("", "RATE_LIMITED"),
  who: fc.constantFrom("address", "key"),
  keyId: fc.constantFrom("", "mk_1", "mk_2"),
  ms: fc.integer({ min: 0, max: 500 }),
  atMs: fc.integer({ min: 0, max: 5_999 }),
});

describe("Analytics Engine points, aggregated (docs/operations.md#analytics-engine)", () => {
  it("any requests at any times: the points count every request once and keep each kind's time; at most one point per kind and second (property)", () => {
    fc.assert(
      fc.property(fc.array(request, { maxLength: 300 }), (raw) => {
        vi.useFakeTimers({ now: 1_000_000_000 });
        const start = Date.now();
        const sink = recording();
        const events = new RequestEvents();
        const sorted = [...raw].sort((a, b) => a.atMs - b.atMs);
        for (const { atMs, ...event } of sorted) {
          vi.setSystemTime(start + atMs);
          events.add(sink, Date.now(), event as RequestEvent);
        }
        // What is still held goes with the isolate's metrics' hand-on.
        events.flush(sink);
        const counted = sink.points.reduce((sum, p) => sum + p.doubles![2]!, 0);
        expect(counted, "requests the points count").toBe(raw.length);
        const totalMs = sink.points.reduce((sum, p) => sum + p.doubles![1]! * p.doubles![2]!, 0);
        expect(Math.round(totalMs), "their time").toBe(raw.reduce((sum, r) => sum + r.ms, 0));
        const seconds = new Set(raw.map((r) => Math.floor((start + r.atMs) / 1000)));
        const kinds = new Set(raw.map((r) => [r.route, r.method, r.status, r.code, r.who, r.keyId].join()));
        expect(sink.points.length, "points: at most a kind a second (two when a flush splits one)").toBeLessThanOrEqual(2 * seconds.size * kinds.size);
        expect(sink.points.length, "points, never more than requests").toBeLessThanOrEqual(raw.length);
        vi.useRealTimers();
      }),
      { numRuns: 100 },
    );
  });

  it("1,000 requests of two kinds in a second are two points, written by the first request a second later; the held kinds are bounded", () => {
    vi.useFakeTimers({ now: 2_000_000_000 });
    const sink = recording();
    const events = new RequestEvents();
    const base = { method: "GET", code: "", who: "address", keyId: "", ms: 3 };
    for (let i = 0; i < 1_000; i++) {
      vi.setSystemTime(2_000_000_000 + (i % 900));
      events.add(sink, Date.now(), { ...base, route: i % 2 ? "/api/ticker/:pair" : "/api/time", status: 200 });
    }
    expect(sink.points.length, "points within the second").toBe(0);
    vi.setSystemTime(2_000_001_000);
    events.add(sink, Date.now(), { ...base, route: "/api/time", status: 200 });
    expect(sink.points.map((p) => [p.blobs![0], p.doubles![2]])).toEqual([
      ["/api/time", 500],
      ["/api/ticker/:pair", 500],
    ]);
    events.flush(sink);
    for (let i = 0; i <= MAX_KINDS_HELD; i++) events.add(sink, Date.now(), { ...base, route: `/r/${i}`, status: 200 });
    expect(sink.points.length, "more kinds than held are written early").toBe(3 + MAX_KINDS_HELD);
  });
});

describe("the app's requests as Analytics Engine points", () => {
  it("20 requests of one kind in a second are one point, not 20 (before: a point per request)", async () => {
    const { env } = await import("cloudflare:workers");
    const { createApp } = await import("../../src/app");
    const { requestEvents } = await import("../../src/metrics/middleware");
    const sink = recording();
    const app = createApp();
    const ask = (_: unknown, i: number) =>
      app.request("/api/time", { headers: { "CF-Connecting-IP": `192.0.2.${100 + i}` } }, { ...env, REQUEST_EVENTS: sink });
    // Within one second of the isolate's clock (it moves only with I/O): the point is written at its end.
    requestEvents.flush(sink);
    sink.points.length = 0;
    const answers = await Promise.all(Array.from({ length: 20 }, ask));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    requestEvents.flush(sink);
    const time = sink.points.filter((p) => p.blobs![0] === "/api/time");
    expect(
      time.reduce((sum, p) => sum + p.doubles![2]!, 0),
      "requests counted",
    ).toBe(20);
    expect(time.length, "points written for them").toBeLessThanOrEqual(2);
  });
});
