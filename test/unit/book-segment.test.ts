import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeSegment, encodeSegment } from "../../src/history/book-history";
import type { BookSegment } from "../../src/writes/book-log";

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
});
