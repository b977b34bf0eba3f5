import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSegment, encodeSegment } from "../../src/history/book-history";
import { BLOCK_ENTRIES, blockFor, decodeIndex, encodeIndex, segmentBlocks } from "../../src/history/segment-blocks";
import type { BookSegment } from "../../src/writes/book-entries";

const level = fc.tuple(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n })).map(([p, q]) => [p, q] as const);
const segment = fc.record({
  base: fc.record({ sequence: fc.nat(), time: fc.nat(), bids: fc.array(level, { maxLength: 5 }), asks: fc.array(level, { maxLength: 5 }) }),
  entries: fc.array(
    fc.record({
      time: fc.nat(),
      updates: fc.array(
        fc.record({
          type: fc.constantFrom("snapshot" as const, "delta" as const),
          sequence: fc.nat(),
          bids: fc.array(level, { maxLength: 5 }),
          asks: fc.array(level, { maxLength: 5 }),
        }),
        { minLength: 1, maxLength: 3 },
      ),
      fingerprint: fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 8, maxLength: 14 }),
    }),
    { minLength: 1, maxLength: 20 },
  ),
});

describe("a book segment as R2 keeps it (src/history/book-history.ts)", () => {
  it("holds every update as it was, and no batch's fingerprint: the log keeps those, history never reads them (property; fails before: each kept)", () => {
    fc.assert(
      fc.property(segment, (s) => {
        const text = encodeSegment(s as unknown as BookSegment);
        expect(text.includes('"f":'), "a fingerprint in the segment").toBe(false);
        const back = decodeSegment(text);
        expect(back.base, "the base").toEqual({ ...s.base, bids: s.base.bids.map((l) => [...l]), asks: s.base.asks.map((l) => [...l]) });
        expect(back.entries, "the entries, without their fingerprints").toEqual(
          s.entries.map(({ time, updates }) => ({
            time,
            updates: updates.map((u) => ({ ...u, bids: u.bids.map((l) => [...l]), asks: u.asks.map((l) => [...l]) })),
          })),
        );
      }),
    );
  });

  it("cut into blocks, each block's checkpoint is the book its batches left, no block replays more than BLOCK_ENTRIES, and the blocks hold every batch once (property)", () => {
    // Sequences rising, as a segment's do; levels unique a side in the base.
    const rising = segment.map((s) => {
      let sequence = s.base.sequence;
      const unique = (levels: readonly (readonly [bigint, bigint])[]) => [...new Map(levels.filter(([, q]) => q > 0n).map(([p, q]) => [p, q])).entries()];
      return {
        // In the book's order, as a market's base is.
        base: { ...s.base, bids: unique(s.base.bids).sort(([a], [b]) => (a > b ? -1 : 1)), asks: unique(s.base.asks).sort(([a], [b]) => (a < b ? -1 : 1)) },
        entries: s.entries.map((e) => ({ time: e.time, updates: e.updates.map((u) => ({ ...u, sequence: ++sequence })) })),
      };
    });
    const many = fc.tuple(rising, fc.integer({ min: 1, max: 3 })).map(([s, times]) => ({
      ...s,
      entries: Array.from({ length: times * 200 }, (_, i) => s.entries[i % s.entries.length]!).map((e, i) => ({
        time: i,
        updates: e.updates.map((u, j) => ({ ...u, sequence: s.base.sequence + 1 + i * 3 + j })),
      })),
    }));
    fc.assert(
      fc.property(many, (s) => {
        const blocks = [...segmentBlocks(encodeSegment(s as unknown as BookSegment))];
        const decoded = blocks.map((b) => decodeSegment(b.text));
        expect(decoded.flatMap((b) => b.entries).length, "every batch, once").toBe(s.entries.length);
        // The book replayed from the segment's base, checked at each block's start.
        const sides = { bids: new Map<bigint, bigint>(), asks: new Map<bigint, bigint>() };
        for (const [price, quantity] of s.base.bids) sides.bids.set(price, quantity);
        for (const [price, quantity] of s.base.asks) sides.asks.set(price, quantity);
        for (const [i, block] of decoded.entries()) {
          expect(block.entries.length, `block ${i}'s batches`).toBeLessThanOrEqual(BLOCK_ENTRIES);
          const sorted = (side: Map<bigint, bigint>, descending: boolean) =>
            [...side.entries()].sort(([a], [b]) => (a < b ? (descending ? 1 : -1) : descending ? -1 : 1));
          expect(block.base.bids, `block ${i}'s checkpoint bids`).toEqual(sorted(sides.bids, true));
          expect(block.base.asks, `block ${i}'s checkpoint asks`).toEqual(sorted(sides.asks, false));
          expect(block.base.sequence, `block ${i}'s checkpoint sequence`).toBe(blocks[i]!.baseSeq);
          for (const entry of block.entries) {
            for (const update of entry.updates) {
              if (update.type === "snapshot") {
                sides.bids.clear();
                sides.asks.clear();
              }
              for (const [price, quantity] of update.bids) quantity === 0n ? sides.bids.delete(price) : sides.bids.set(price, quantity);
              for (const [price, quantity] of update.asks) quantity === 0n ? sides.asks.delete(price) : sides.asks.set(price, quantity);
            }
          }
        }
        // The index finds, for any sequence, the block whose checkpoint is at or before it and whose batches reach it.
        let offset = 0;
        const index = decodeIndex(
          encodeIndex(blocks.map((b) => ({ offset: (offset += 10), bytes: 10, baseSeq: b.baseSeq, baseTime: b.baseTime }))),
          offset + 10,
        );
        const last = s.entries.at(-1)!.updates.at(-1)!.sequence;
        for (let sequence = s.base.sequence; sequence <= last; sequence += 17) {
          const found = blockFor(index, { sequence });
          const i = index.indexOf(found);
          expect(found.baseSeq, `the block for ${sequence} starts at or before it`).toBeLessThanOrEqual(sequence);
          if (i + 1 < index.length) expect(index[i + 1]!.baseSeq, `the next block starts after ${sequence}`).toBeGreaterThan(sequence);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("a segment of many small batches (a busy market's 4,096 commits of five) is at most 128 blocks, whose offsets fit R2's 2 KB of metadata (fails before: 64 blocks of [offset, sequence, time] passed it)", () => {
    const entries = Array.from({ length: 20_480 }, (_, i) => ({ t: 1_000 + i, u: [["d", i + 1, [[String(100 + (i % 50)), String(i)]], []]] }));
    const text = `{"base":{"sequence":0,"time":1000,"bids":[],"asks":[]},"entries":[${entries.map((e) => JSON.stringify(e)).join(",")}]}`;
    const blocks = [...segmentBlocks(text)];
    expect(blocks.length, "blocks").toBeLessThanOrEqual(128);
    const offsets = blocks.map((_, i) => String(i * 8_000)).join(",");
    expect(offsets.length, "the offsets' metadata, at offsets of up to seven digits").toBeLessThan(2_048);
    expect(
      blocks.slice(0, -1).every((b) => decodeSegment(b.text).entries.length === BLOCK_ENTRIES),
      "every block but the last holds BLOCK_ENTRIES",
    ).toBe(true);
  });
});
