import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientBook, type BookMessage } from "../../src/pages/client/book";

const level = fc.tuple(fc.integer({ min: 1, max: 60 }).map(String), fc.oneof(fc.constant("0"), fc.integer({ min: 1, max: 9 }).map((q) => `${q}.5`)));

describe("the market page's book", () => {
  it("applies snapshot and deltas like a plain map, sorted best first, with cumulative depth", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.array(level, { maxLength: 8 }), fc.array(level, { maxLength: 8 })), { maxLength: 20 }), (deltas) => {
        const book = new ClientBook();
        const model = { bids: new Map<string, string>(), asks: new Map<string, string>() };
        expect(book.apply({ type: "snapshot", sequence: 10, bids: [["5", "1"]], asks: [["70", "2"]] })).toBe(true);
        model.bids.set("5", "1");
        model.asks.set("70", "2");
        deltas.forEach(([bids, asks], i) => {
          const message: BookMessage = { type: "delta", sequence: 11 + i, bids, asks };
          expect(book.apply(message)).toBe(true);
          for (const [side, levels] of [["bids", bids], ["asks", asks]] as const) {
            for (const [p, q] of levels) Number(q) === 0 ? model[side].delete(p) : model[side].set(p, q);
          }
        });
        const bids = [...model.bids].sort((a, b) => Number(b[0]) - Number(a[0]));
        expect(book.ladder("bids")).toEqual(bids);
        let total = 0;
        expect(book.depth("bids")).toEqual(bids.slice(0, 50).map(([p, q]) => [Number(p), (total += Number(q))]));
      }),
    );
  });

  it("reports a sequence gap and waits for the next snapshot", () => {
    const book = new ClientBook();
    expect(book.apply({ type: "delta", sequence: 1, bids: [], asks: [] })).toBe(false);
    book.apply({ type: "snapshot", sequence: 4, bids: [["1", "1"]], asks: [] });
    expect(book.apply({ type: "delta", sequence: 6, bids: [["2", "1"]], asks: [] })).toBe(false);
    expect(book.apply({ type: "delta", sequence: 5, bids: [["2", "1"]], asks: [] })).toBe(false);
    expect(book.apply({ type: "snapshot", sequence: 9, bids: [["3", "1"]], asks: [] })).toBe(true);
    expect(book.ladder("bids")).toEqual([["3", "1"]]);
  });
});
