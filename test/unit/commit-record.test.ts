import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BookEntry, decodeCommit, encodeCommit } from "../../src/writes/book-entries";
import { type PackedTrade, pack, unpack } from "../../src/writes/trade-blocks";

const units = fc.bigInt({ min: 0n, max: 10n ** 30n });
const levels = fc.array(fc.tuple(units, units), { maxLength: 6 });
const update = fc.record({
  type: fc.constantFrom("snapshot" as const, "delta" as const),
  sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  bids: levels,
  asks: levels,
});
const entry: fc.Arbitrary<BookEntry> = fc.record({
  time: fc.integer({ min: 0, max: 2 ** 45 }),
  updates: fc.array(update, { minLength: 1, maxLength: 4 }),
  fingerprint: fc.string({ minLength: 1, maxLength: 12 }),
});
const trade = fc.record({
  id: fc.string({ minLength: 1, maxLength: 64 }),
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  price: fc.bigInt({ min: 1n, max: 10n ** 30n }),
  quantity: fc.bigInt({ min: 1n, max: 10n ** 30n }),
  side: fc.constantFrom("buy" as const, "sell" as const),
  time: fc.integer({ min: 0, max: 2 ** 45 }),
});

describe("a commit's record: one row for a tick's book entries and trades (src/writes/book-log.ts)", () => {
  it("reads back exactly what was written, for any entries and trades (property)", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), fc.array(trade, { maxLength: 20 }), fc.integer({ min: 1, max: 2 ** 45 }), (entries, trades, at) => {
        const back = decodeCommit(encodeCommit(entries, trades.map(pack), at));
        expect(back.entries, "the book entries").toEqual(entries);
        expect((back.trades as PackedTrade[]).map(unpack), "the trades").toEqual(trades);
        if (trades.length > 0) expect(back.at, "the commit's time, with its trades").toBe(at);
      }),
    );
  });
});
