import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { binanceDialect } from "../../src/binance/stream-dialect";
import { DEPTH_PACE_MS } from "../../src/binance/streams";
import { DialectFanout } from "../../src/streams/dialect-fanout";
import type { StreamName } from "../../src/streams/protocol";
import type { BookMessage } from "../../src/streams/wire-book";

/**
 * Binance's `@depth` at its default 1000 ms (docs/binance.md#streams): the shard's book diffs come
 * every 100 ms or faster; the paced stream sends what a second said as one diff, never two sends
 * within a second, and a client applying the frames in order has the book the diffs made — with a
 * gap between diffs (a resync) still a gap in `U`…`u`.
 */
const native: StreamName = { name: "book.BTCUSDT", kind: "book", subject: "BTCUSDT" };
const depth = { name: "btcusdt@depth", kind: "depthDiff", native, paceMs: DEPTH_PACE_MS } as const;

afterEach(() => {
  vi.useRealTimers();
});

const events = fc.array(
  fc.record({
    gap: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    bids: fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 5 })), { selector: ([p]) => p, maxLength: 4 }),
    advanceMs: fc.integer({ min: 0, max: 700 }),
  }),
  { minLength: 1, maxLength: 60 },
);

describe("Binance's @depth paced to 1000 ms (docs/binance.md#streams)", () => {
  it("any diffs at any times: sends a second apart or more, the frames' book is the diffs' book, gaps kept where they were (property)", () => {
    fc.assert(
      fc.property(events, (input) => {
        vi.useFakeTimers({ now: 1_000_000 });
        const sent: { at: number; frame: { U: number; u: number; b: [string, string][] } }[] = [];
        const socket = {} as WebSocket;
        const fanout = new DialectFanout(
          binanceDialect,
          (_ws, text) => sent.push({ at: Date.now(), frame: JSON.parse(text) }),
          () => ({}),
        );
        fanout.add(socket, depth);
        const truth = new Map<string, string>();
        const gapsAt = new Set<number>();
        let sequence = 100;
        for (const event of input) {
          if (event.gap) gapsAt.add((sequence += 3) + 1);
          const bids = event.bids.map(([p, q]) => [`${p}.00`, `${q}.0`] as [string, string]);
          for (const [p, q] of bids) truth.set(p, q);
          sequence += 1;
          const message: BookMessage = { type: "delta", firstSequence: sequence, sequence, bids, asks: [] };
          fanout.deliver(native, message, undefined);
          vi.advanceTimersByTime(event.advanceMs);
        }
        vi.advanceTimersByTime(DEPTH_PACE_MS);

        const sendTimes = [...new Set(sent.map((s) => s.at))];
        for (let i = 1; i < sendTimes.length; i++) {
          expect(sendTimes[i]! - sendTimes[i - 1]!, `sends ${i - 1} and ${i} apart (ms)`).toBeGreaterThanOrEqual(DEPTH_PACE_MS);
        }
        const frames = sent.map((s) => s.frame);
        expect(frames[0]?.U, "the first frame's U").toBe(101 + (input[0]!.gap ? 3 : 0));
        expect(frames[frames.length - 1]?.u, "the last frame's u").toBe(sequence);
        for (let i = 1; i < frames.length; i++) {
          const continues = frames[i]!.U === frames[i - 1]!.u + 1;
          expect(continues || gapsAt.has(frames[i]!.U), `frame ${i}: U ${frames[i]!.U} after u ${frames[i - 1]!.u}, a gap the diffs had?`).toBe(true);
        }
        const gapsSent = frames.slice(1).filter((f, i) => f.U !== frames[i]!.u + 1).length;
        expect(gapsSent, "gaps in the frames, as in the diffs").toBe([...gapsAt].filter((at) => at !== frames[0]?.U).length);
        const book = new Map<string, string>();
        for (const frame of frames) for (const [p, q] of frame.b) book.set(p, q);
        expect(book, "the book the frames make").toEqual(truth);
        vi.useRealTimers();
      }),
      { numRuns: 200 },
    );
  });

  it("holds one payload per paced stream while nobody leaves, and nothing once its last subscriber left", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const sent: string[] = [];
    const socket = {} as WebSocket;
    const fanout = new DialectFanout(
      binanceDialect,
      (_ws, text) => sent.push(text),
      () => ({}),
    );
    fanout.add(socket, depth);
    for (let sequence = 1; sequence <= 50; sequence++) {
      fanout.deliver(native, { type: "delta", firstSequence: sequence, sequence, bids: [["1.00", `${sequence}.0`]], asks: [] }, undefined);
      vi.advanceTimersByTime(100);
    }
    // 5 s of changes every 100 ms: the first at once, then one a second (at 1 s … 5 s), not 50.
    expect(sent.length, "frames sent for 50 diffs over 5 s").toBe(6);
    fanout.remove(socket, depth.name);
    fanout.deliver(native, { type: "delta", firstSequence: 51, sequence: 51, bids: [], asks: [] }, undefined);
    vi.advanceTimersByTime(5 * DEPTH_PACE_MS);
    expect(sent.length, "frames after the last subscriber left").toBe(6);
    expect(vi.getTimerCount(), "timers left").toBe(0);
  });
});
