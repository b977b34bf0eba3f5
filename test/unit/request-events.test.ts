import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { MAX_KINDS_HELD, POINT_WINDOW_MS, type RequestEvent, RequestEvents, SLOW_MS } from "../../src/metrics/request-events";

/** Analytics Engine's points as written (the binding drops them locally: its write is all this code uses). */
const recording = () => {
  const points: { indexes?: string[]; blobs?: string[]; doubles?: number[] }[] = [];
  return { points, writeDataPoint: (point: (typeof points)[number]) => points.push(point) };
};

const request = fc.record({
  route: fc.constantFrom("/api/ticker/:pair", "/api/orderbook/:pair", "/binance/api/v3/depth"),
  method: fc.constantFrom("GET", "POST"),
  status: fc.constantFrom(200, 400, 429),
  code: fc.constantFrom("", "RATE_LIMITED"),
  who: fc.constantFrom("address", "key"),
  keyId: fc.constantFrom("", "mk_1", "mk_2"),
  ms: fc.integer({ min: 0, max: 500 }),
});

/** A kind as the points keep it: a success names no key. */
const kindOf = (r: RequestEvent) => [r.route, r.method, r.status, r.code, r.who, r.status >= 400 ? r.keyId : ""].join();

describe("Analytics Engine points, aggregated (docs/operations.md#analytics-engine)", () => {
  it("any requests, any hand-ons within a window: the points count every request once and keep each kind's time; one point per kind between hand-ons (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(request, fc.boolean()), { maxLength: 300 }), (raw) => {
        const sink = recording();
        const events = new RequestEvents();
        let kinds = new Set<string>();
        let most = 0;
        for (const [event, handOn] of raw) {
          events.add(sink, 0, event);
          kinds.add(kindOf(event));
          if (handOn) {
            events.flush(sink);
            most += kinds.size;
            kinds = new Set();
          }
        }
        events.flush(sink);
        most += kinds.size;
        const counted = sink.points.reduce((sum, p) => sum + p.doubles![2]!, 0);
        expect(counted, "requests the points count").toBe(raw.length);
        const totalMs = sink.points.reduce((sum, p) => sum + p.doubles![1]! * p.doubles![2]!, 0);
        expect(Math.round(totalMs), "their time").toBe(raw.reduce((sum, [r]) => sum + r.ms, 0));
        expect(sink.points.length, "points: one a kind between hand-ons").toBe(most);
        for (const p of sink.points) if (p.doubles![0]! < 400) expect(p.blobs![4], "a success's point names no key").toBe("");
      }),
      { numRuns: 100 },
    );
  });

  it("1,000 requests over 9 s are a point per kind, written by the first request 25 s on (before: one per kind each second); a refusal keeps its key id; the held kinds are bounded", () => {
    const sink = recording();
    const events = new RequestEvents();
    const start = 2_000_000_000;
    const base = { method: "GET", code: "", who: "key", ms: 3 };
    for (let i = 0; i < 1_000; i++) {
      events.add(sink, start + i * 9, { ...base, route: i % 2 ? "/api/ticker/:pair" : "/api/time", status: 200, keyId: `mk_${i % 7}` });
    }
    events.add(sink, start + 9_500, { ...base, route: "/api/time", status: 429, code: "RATE_LIMITED", keyId: "mk_3" });
    expect(sink.points.length, "points within the window").toBe(0);
    events.add(sink, start + POINT_WINDOW_MS, { ...base, route: "/api/time", status: 200, keyId: "" });
    expect(sink.points.map((p) => [p.blobs![0], p.doubles![0], p.blobs![4], p.doubles![2]])).toEqual([
      ["/api/time", 200, "", 500],
      ["/api/ticker/:pair", 200, "", 500],
      ["/api/time", 429, "mk_3", 1],
    ]);
    events.flush(sink);
    expect(sink.points.length, "the hand-on writes what is held").toBe(4);
    for (let i = 0; i <= MAX_KINDS_HELD; i++) events.add(sink, start + POINT_WINDOW_MS, { ...base, route: `/r/${i}`, status: 200, keyId: "" });
    expect(sink.points.length, "more kinds than held are written early").toBe(4 + MAX_KINDS_HELD);
  });
});

describe("a fast success's points sampled (docs/operations.md#analytics-engine)", () => {
  it("any requests, any draws, any sample: refusals, failures and slow successes are written as counted; a fast success's kind is written when its draw falls under 1 / sample and then stands for sample times its requests (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.record({ event: request, slow: fc.boolean() }), { maxLength: 40 }), { maxLength: 8 }),
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 50 }),
        fc.integer({ min: 1, max: 20 }),
        (windows, draws, sampleEvery) => {
          let drawn = 0;
          const random = () => draws[drawn++ % draws.length]!;
          const events = new RequestEvents(random);
          for (const window of windows) {
            const sink = recording();
            const kinds = new Map<string, { count: number; maxMs: number; status: number }>();
            for (const { event, slow } of window) {
              const r = { ...event, ms: slow ? SLOW_MS + event.ms : event.ms };
              events.add(sink, 0, r, { waitUntil: () => {}, sampleEvery });
              const kind = kindOf(r);
              const held = kinds.get(kind) ?? { count: 0, maxMs: 0, status: r.status };
              kinds.set(kind, { ...held, count: held.count + 1, maxMs: Math.max(held.maxMs, r.ms) });
            }
            const before = drawn;
            events.flush(sink);
            // The draws this window took, in the order of its kinds (a Map keeps insertion order).
            let draw = before;
            const expected = [...kinds.values()].flatMap(({ count, maxMs, status }) => {
              if (status >= 400 || maxMs >= SLOW_MS || sampleEvery === 1) return [[count, 1]];
              return draws[draw++ % draws.length]! * sampleEvery < 1 ? [[count * sampleEvery, sampleEvery]] : [];
            });
            expect(
              sink.points.map((p) => [p.doubles![2], p.doubles![4]]),
              "each point's requests and sample: a refusal, failure or slow success as counted, a fast success per its draw",
            ).toEqual(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("3 fast kinds over 60 windows at one in 10 are 18 points, not 180, and the points still sum to every request (draws spread evenly); a 429 and a slow answer are in every window (fails before: 180 points)", () => {
    let n = 0;
    const events = new RequestEvents(() => (n++ % 10) / 10);
    const sink = recording();
    const base = { method: "GET", code: "", who: "address", keyId: "" };
    let requests = 0;
    for (let w = 0; w < 60; w++) {
      for (const route of ["/api/ticker/:pair", "/api/orderbook/:pair", "/api/trades/:pair"]) {
        for (let i = 0; i < 5; i++) events.add(sink, 0, { ...base, route, status: 200, ms: 3 }, { waitUntil: () => {}, sampleEvery: 10 });
        requests += 5;
      }
      events.add(sink, 0, { ...base, route: "/api/time", status: 429, code: "RATE_LIMITED", ms: 1 }, { waitUntil: () => {}, sampleEvery: 10 });
      events.add(sink, 0, { ...base, route: "/api/klines/:pair", status: 200, ms: SLOW_MS }, { waitUntil: () => {}, sampleEvery: 10 });
      events.flush(sink);
    }
    const fast = sink.points.filter((p) => p.doubles![0] === 200 && p.doubles![3]! < SLOW_MS);
    expect(fast.length, "the fast successes' points").toBe(18);
    expect(
      fast.reduce((sum, p) => sum + p.doubles![2]!, 0),
      "the requests they stand for",
    ).toBe(requests);
    expect(sink.points.filter((p) => p.doubles![0] === 429).length, "the refusals' points: one a window").toBe(60);
    expect(sink.points.filter((p) => p.doubles![3]! >= SLOW_MS).length, "the slow answers' points: one a window").toBe(60);
  });
});

describe("a window's own timer (docs/operations.md#analytics-engine)", () => {
  it("requests 10 s apart share one window of 25 s, written by the timer its first request left — a quiet isolate's last points — which then hands on their count; a window opened since has its own timer (fails before: written at every 10 s hand-on, no timer of their own)", async () => {
    vi.useFakeTimers();
    try {
      const sink = recording();
      const events = new RequestEvents();
      const waits: Promise<unknown>[] = [];
      let handedOn = 0;
      const add = (at: number, route: string) =>
        events.add(
          sink,
          at,
          { route, method: "GET", status: 200, code: "", who: "address", keyId: "", ms: 1 },
          {
            waitUntil: (promise) => waits.push(promise),
            written: () => {
              handedOn += 1;
              return undefined;
            },
          },
        );
      const t0 = Date.now();
      add(t0, "/api/time");
      await vi.advanceTimersByTimeAsync(10_000);
      add(t0 + 10_000, "/api/time");
      add(t0 + 10_000, "/api/markets");
      await vi.advanceTimersByTimeAsync(10_000);
      add(t0 + 20_000, "/api/time");
      expect([sink.points.length, waits.length], "20 s on: nothing written, one timer left (by the window's first request)").toEqual([0, 1]);
      await vi.advanceTimersByTimeAsync(POINT_WINDOW_MS - 20_000);
      await Promise.all(waits);
      expect(
        sink.points.map((p) => [p.blobs![0], p.doubles![2]]),
        "the window's points, written by its timer",
      ).toEqual([
        ["/api/time", 3],
        ["/api/markets", 1],
      ]);
      expect(handedOn, "their count handed on once").toBe(1);
      // A request that finds a window due writes it and opens the next: the old timer leaves the new window to its own.
      add(t0 + 30_000, "/api/status");
      add(t0 + 30_000 + POINT_WINDOW_MS, "/api/time");
      expect(sink.points.length, "the due window written by the request that found it so").toBe(3);
      await vi.advanceTimersByTimeAsync(POINT_WINDOW_MS);
      await Promise.all(waits);
      expect(waits.length, "a timer a window").toBe(3);
      expect(
        sink.points.map((p) => p.blobs![0]),
        "the second window's timer found it written and left the third alone; the third's wrote it",
      ).toEqual(["/api/time", "/api/markets", "/api/status", "/api/time"]);
      expect(handedOn, "a hand-on per window a timer wrote").toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the window's bound", () => {
  it("a window set longer than POINT_WINDOW_MS is written at POINT_WINDOW_MS: its timer must end within waitUntil's 30 s (fails before: written at 60 s)", async () => {
    vi.useFakeTimers();
    try {
      const sink = recording();
      const waits: Promise<unknown>[] = [];
      new RequestEvents().add(
        sink,
        Date.now(),
        { route: "/api/time", method: "GET", status: 200, code: "", who: "address", keyId: "", ms: 1 },
        {
          waitUntil: (promise) => waits.push(promise),
          windowMs: 60_000,
        },
      );
      await vi.advanceTimersByTimeAsync(POINT_WINDOW_MS);
      expect(sink.points.length, "written by its timer at POINT_WINDOW_MS").toBe(1);
      await Promise.all(waits);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the app's requests as Analytics Engine points", () => {
  it("20 requests of one kind are one point, not 20 (before: a point per request)", async () => {
    const { env } = await import("cloudflare:workers");
    const { createApp } = await import("../../src/app");
    const { requestEvents } = await import("../../src/metrics/middleware");
    const sink = recording();
    const app = createApp();
    const ask = (_: unknown, i: number) =>
      app.request("/api/time", { headers: { "CF-Connecting-IP": `192.0.2.${100 + i}` } }, { ...env, REQUEST_EVENTS: sink, ANALYTICS_SUCCESS_SAMPLE: "1" });
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
    expect(time.length, "points written for them").toBe(1);
  });
});
