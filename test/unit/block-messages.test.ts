import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BoundedMap } from "../../src/core/bounded-map";
import type { OrderBook } from "../../src/domain/order-book";
import { blockMessages, pageOf } from "../../src/history/block-messages";
import { type ReplayBookMessage, segmentPage } from "../../src/history/book-replay";
import type { BookSegment } from "../../src/writes/book-entries";

const scales = { priceScale: 2, quantityScale: 3 };
const level = fc.tuple(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 5 })).map(([p, q]) => [BigInt(1_000 + p), BigInt(q)] as const);

/** A closed block: a checkpoint, then batches of rising sequences a few ms to a few windows apart, now and then a publisher's snapshot. */
const block = fc
  .record({
    base: fc.record({ sequence: fc.nat({ max: 1_000 }), time: fc.nat({ max: 10_000 }) }),
    bids: fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 8 }),
    asks: fc.uniqueArray(fc.integer({ min: 31, max: 60 }), { maxLength: 8 }),
    entries: fc.array(
      fc.record({
        gap: fc.integer({ min: 0, max: 250 }),
        updates: fc.array(
          fc.record({ kind: fc.integer({ min: 0, max: 9 }), bids: fc.array(level, { maxLength: 4 }), asks: fc.array(level, { maxLength: 4 }) }),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
      }),
      { minLength: 1, maxLength: 60 },
    ),
  })
  .map(({ base, bids, asks, entries }) => {
    let sequence = base.sequence;
    let time = base.time;
    const side = (prices: number[], descending: boolean) =>
      [...prices].sort((a, b) => (descending ? b - a : a - b)).map((p) => [BigInt(1_000 + p), 1n] as [bigint, bigint]);
    return {
      base: { sequence: base.sequence, time: base.time, bids: side(bids, true), asks: side(asks, false) },
      entries: entries.map((e) => {
        time += e.gap;
        return {
          time,
          updates: e.updates.map((u) => ({
            type: u.kind === 0 ? ("snapshot" as const) : ("delta" as const),
            sequence: ++sequence,
            // A snapshot's levels are the book: no removals in it.
            bids: u.bids.map(([p, q]) => [p, q] as [bigint, bigint]),
            asks: u.asks.map(([p, q]) => [p + 100n, q] as [bigint, bigint]),
          })),
        };
      }),
    } as unknown as BookSegment;
  });

type Limits = { to: number; toSequence: number; maxBytes: number };

/** The pages of a replay or catch-up from `from` through the block, cursor to cursor; `sliced`: later pages from the block's messages made once. */
function pages(segment: BookSegment, from: number, limits: Limits, sliced: boolean): ReplayBookMessage[] {
  const held = new BoundedMap<OrderBook>(1 << 24, 64, () => 1);
  const made = blockMessages(segment, scales);
  const out: ReplayBookMessage[] = [];
  let after: number | undefined;
  for (let n = 0; n < 1_000; n++) {
    const slice = sliced && after !== undefined ? pageOf(made, after, limits) : undefined;
    if (slice) {
      out.push(...slice.messages);
      after = slice.messages.at(-1)!.sequence;
      continue;
    }
    const page = segmentPage(segment, scales, from, after, limits, held, "BTCUSDT");
    out.push(...page.messages);
    if (page.end !== "bytes") return out;
    after = page.sequence;
  }
  throw new Error("a replay that does not end");
}

describe("a closed block's messages made once (src/history/block-messages.ts)", () => {
  it("pages sliced from them are the pages a replay from the checkpoint makes: the same messages, in order, for any start, bounds and page size (property; fails when a slice starts a window apart or passes a bound)", () => {
    fc.assert(
      fc.property(
        block,
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 100, max: 4_000 }),
        fc.boolean(),
        fc.boolean(),
        (segment, fromAt, cutAt, maxBytes, cutTime, cutSequence) => {
          const entries = segment.entries;
          const first = segment.base.time;
          const last = entries.at(-1)!.time;
          const from = first + (fromAt % (last - first + 1));
          const lastSequence = entries.at(-1)!.updates.at(-1)!.sequence;
          const limits = {
            to: cutTime ? from + (cutAt % (last - from + 1)) : Number.MAX_SAFE_INTEGER,
            toSequence: cutSequence ? segment.base.sequence + 1 + (cutAt % (lastSequence - segment.base.sequence)) : Number.MAX_SAFE_INTEGER,
            maxBytes,
          };
          const replayed = pages(segment, from, limits, false);
          const sliced = pages(segment, from, limits, true);
          expect(sliced, "the messages sliced from the block's, against those replayed page by page").toEqual(replayed);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a cursor inside a window is not sliced (its page is replayed): only a window's end starts a slice", () => {
    const segment = {
      base: { sequence: 10, time: 0, bids: [[1_001n, 1n]], asks: [[1_100n, 1n]] },
      entries: [
        { time: 10, updates: [{ type: "delta", sequence: 11, bids: [[1_002n, 1n]], asks: [] }] },
        { time: 20, updates: [{ type: "delta", sequence: 12, bids: [[1_003n, 1n]], asks: [] }] },
        { time: 150, updates: [{ type: "delta", sequence: 13, bids: [[1_004n, 1n]], asks: [] }] },
      ],
    } as unknown as BookSegment;
    const made = blockMessages(segment, scales);
    const bounds = { to: Number.MAX_SAFE_INTEGER, toSequence: Number.MAX_SAFE_INTEGER };
    expect(
      made.messages.map((m) => [m.firstSequence, m.sequence]),
      "two windows",
    ).toEqual([
      [11, 12],
      [13, 13],
    ]);
    expect(pageOf(made, 11, bounds), "after 11: inside the first window").toBeUndefined();
    expect(
      pageOf(made, 12, bounds)?.messages.map((m) => m.sequence),
      "after 12: the second window",
    ).toEqual([13]);
    expect(pageOf(made, 10, { ...bounds, toSequence: 11 }), "a bound inside the window: replayed").toBeUndefined();
  });
});
