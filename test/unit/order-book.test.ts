import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OrderBook, type UnitLevel } from "../../src/market/order-book";

/** The naive model: a map per side, sorted only when read. */
class NaiveBook {
  bids = new Map<bigint, bigint>();
  asks = new Map<bigint, bigint>();
  sequence = 0;
  snapshot(sequence: number, bids: readonly UnitLevel[], asks: readonly UnitLevel[]) {
    this.bids = new Map(bids);
    this.asks = new Map(asks);
    this.sequence = sequence;
  }
  delta(sequence: number, bids: readonly UnitLevel[], asks: readonly UnitLevel[]) {
    for (const [side, levels] of [
      [this.bids, bids],
      [this.asks, asks],
    ] as const) {
      for (const [p, q] of levels) {
        if (q === 0n) side.delete(p);
        else side.set(p, q);
      }
    }
    this.sequence = sequence;
  }
  crossedAfter(bids: readonly UnitLevel[], asks: readonly UnitLevel[]): boolean {
    const copy = new NaiveBook();
    copy.snapshot(0, [...this.bids], [...this.asks]);
    copy.delta(0, bids, asks);
    const bestBid = [...copy.bids.keys()].reduce<bigint | undefined>((a, b) => (a === undefined || b > a ? b : a), undefined);
    const bestAsk = [...copy.asks.keys()].reduce<bigint | undefined>((a, b) => (a === undefined || b < a ? b : a), undefined);
    return bestBid !== undefined && bestAsk !== undefined && bestBid >= bestAsk;
  }
  sorted(depth: number) {
    const fmt = (levels: [bigint, bigint][]) => levels.slice(0, depth).map(([p, q]) => [p.toString(), q.toString()]);
    return {
      bids: fmt([...this.bids].sort(([a], [b]) => (a > b ? -1 : 1))),
      asks: fmt([...this.asks].sort(([a], [b]) => (a < b ? -1 : 1))),
    };
  }
}

const price = fc.bigInt({ min: 1n, max: 200n });
const quantity = fc.bigInt({ min: 1n, max: 1000n });
/** Levels with distinct prices on one side. */
const levels = (q: fc.Arbitrary<bigint>) => fc.uniqueArray(fc.tuple(price, q), { selector: ([p]) => p, maxLength: 30 });
const deltaQuantity = fc.oneof(quantity, fc.constant(0n));

describe("order book: random snapshot and deltas behave like a naive model", () => {
  it("equals the model, stays sorted and uncrossed, sequence continuous; refused deltas change nothing", () => {
    fc.assert(
      fc.property(levels(quantity), fc.array(fc.tuple(levels(deltaQuantity), levels(deltaQuantity), fc.boolean()), { maxLength: 40 }), (snapshotLevels, deltas) => {
        // A valid (uncrossed) snapshot: bids below 100, asks from 100 up.
        const bids = snapshotLevels.filter(([p]) => p < 100n);
        const asks = snapshotLevels.filter(([p]) => p >= 100n);
        const book = new OrderBook(0, 0);
        const model = new NaiveBook();
        book.apply({ type: "snapshot", sequence: 7, bids, asks }, 1);
        model.snapshot(7, bids, asks);
        for (const [deltaBids, deltaAsks, skipSequence] of deltas) {
          const sequence = book.sequence + (skipSequence ? 2 : 1);
          const before = JSON.stringify(book.levels(1000));
          let refused: unknown;
          try {
            book.apply({ type: "delta", sequence, bids: deltaBids, asks: deltaAsks }, 2);
          } catch (error) {
            refused = error;
          }
          if (skipSequence) {
            expect(refused).toMatchObject({ code: "SEQUENCE_GAP" });
          } else if (model.crossedAfter(deltaBids, deltaAsks)) {
            expect(refused).toMatchObject({ code: "VALIDATION_FAILED" });
          } else {
            expect(refused).toBeUndefined();
            model.delta(sequence, deltaBids, deltaAsks);
          }
          if (refused) expect(JSON.stringify(book.levels(1000))).toBe(before);
          expect(book.sequence).toBe(model.sequence);
          expect(book.levels(1000)).toEqual(model.sorted(1000));
          const best = [book.bestBid(), book.bestAsk()];
          if (best[0] !== undefined && best[1] !== undefined) expect(best[0] < best[1]).toBe(true);
        }
        expect(book.levels(5)).toEqual(model.sorted(5));
      }),
    );
  });

  it("refuses a crossed snapshot, a zero quantity in a snapshot and a repeated price", () => {
    const book = new OrderBook(2, 5);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[101n, 1n]], asks: [[100n, 1n]] }, 0)).toThrow(/crossed/);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[101n, 1n]], asks: [[101n, 1n]] }, 0)).toThrow(/crossed/);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[99n, 0n]], asks: [] }, 0)).toThrow(/zero quantity/);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[99n, 1n], [99n, 2n]], asks: [] }, 0)).toThrow(/appears twice/);
    expect(book.sequence).toBe(0);
    expect(book.levels(10)).toEqual({ bids: [], asks: [] });
  });

  it("formats levels at the market's scales, best first", () => {
    const book = new OrderBook(2, 5);
    book.apply({ type: "snapshot", sequence: 1, bids: [[9700010n, 50000n], [9700020n, 1n]], asks: [[9700100n, 123456n]] }, 0);
    expect(book.levels(10)).toEqual({ bids: [["97000.20", "0.00001"], ["97000.10", "0.50000"]], asks: [["97001.00", "1.23456"]] });
  });
});
