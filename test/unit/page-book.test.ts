import DecimalJs from "decimal.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BookMessage, ClientBook, compareDecimal, type Level, subtractDecimal } from "../../src/pages/client/book";

/** Exact for every value generated here (the default keeps 20 significant digits). */
const Decimal = DecimalJs.clone({ precision: 100 });

/** A decimal string at a fixed scale, as a market writes its prices and quantities. */
const atScale = (units: number, scale: number) => (scale === 0 ? String(units) : new Decimal(units).div(new Decimal(10).pow(scale)).toFixed(scale));

const levelsAt = (scale: number) =>
  fc.array(
    fc.tuple(
      fc.integer({ min: 1, max: 400 }).map((u) => atScale(u, scale)),
      fc.oneof(
        fc.constant("0"),
        fc.integer({ min: 1, max: 9_999 }).map((u) => atScale(u, 3)),
      ),
    ),
    { maxLength: 6 },
  );

/** The naive model: two plain maps, sorted with decimal.js only when read. */
class NaiveBook {
  sequence = 0;
  readonly sides = { bids: new Map<string, string>(), asks: new Map<string, string>() };

  apply(message: BookMessage): void {
    if (message.type === "snapshot") {
      this.sides.bids.clear();
      this.sides.asks.clear();
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of message[side]) {
        if (new Decimal(quantity).isZero()) this.sides[side].delete(price);
        else this.sides[side].set(price, quantity);
      }
    }
    this.sequence = message.sequence;
  }

  ladder(side: "bids" | "asks"): Level[] {
    const sign = side === "bids" ? -1 : 1;
    return [...this.sides[side]].sort((a, b) => sign * new Decimal(a[0]).cmp(b[0]));
  }

  snapshot(): BookMessage {
    return { type: "snapshot", sequence: this.sequence, bids: this.ladder("bids"), asks: this.ladder("asks") };
  }
}

describe("the market page's book", () => {
  it("orders decimal strings exactly as decimal.js does", () => {
    const decimal = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.integer({ min: 0, max: 18 }))
      .map(([units, scale]) => new Decimal(units.toString()).div(new Decimal(10).pow(scale)).toFixed(scale));
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        expect(Math.sign(compareDecimal(a, b))).toBe(new Decimal(a).cmp(b));
      }),
    );
    expect(compareDecimal("0.1", "0.10")).toBe(0);
    expect(compareDecimal("100000000000000000001", "100000000000000000000")).toBeGreaterThan(0);
  });

  it("subtracts decimal strings exactly (the spread), at the larger scale", () => {
    const decimal = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.integer({ min: 0, max: 12 }))
      .map(([units, scale]) => new Decimal(units.toString()).div(new Decimal(10).pow(scale)).toFixed(scale));
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        const scale = Math.max(a.split(".")[1]?.length ?? 0, b.split(".")[1]?.length ?? 0);
        expect(subtractDecimal(a, b)).toBe(new Decimal(a).minus(b).toFixed(scale));
      }),
    );
    expect(subtractDecimal("96187.20", "96182.4")).toBe("4.80");
  });

  it("follows snapshot and deltas like the naive model, sorted best first, with cumulative depth", () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 0, max: 8 })
          .chain((scale) => fc.tuple(levelsAt(scale), levelsAt(scale), fc.array(fc.tuple(levelsAt(scale), levelsAt(scale)), { maxLength: 25 }))),
        ([snapshotBids, snapshotAsks, deltas]) => {
          const book = new ClientBook();
          const model = new NaiveBook();
          const snapshot: BookMessage = { type: "snapshot", sequence: 10, bids: snapshotBids, asks: snapshotAsks };
          model.apply(snapshot);
          expect(book.apply(snapshot)).toBe("applied");
          deltas.forEach(([bids, asks], i) => {
            const delta: BookMessage = { type: "delta", sequence: 11 + i, bids, asks };
            model.apply(delta);
            expect(book.apply(delta)).toBe("applied");
          });
          expect(book.sequence).toBe(model.sequence);
          expect(book.ladder("bids")).toEqual(model.ladder("bids"));
          expect(book.ladder("asks")).toEqual(model.ladder("asks"));
          let total = 0;
          expect(book.depth("asks", 5)).toEqual(
            model
              .ladder("asks")
              .slice(0, 5)
              .map(([p, q]) => [Number(p), (total += Number(q))]),
          );
        },
      ),
    );
  });

  it("over a lossy stream, reports each gap once, ignores deltas until the resubscription's snapshot, and is right whenever it applies", () => {
    fc.assert(
      fc.property(
        levelsAt(2),
        fc.array(fc.record({ bids: levelsAt(2), asks: levelsAt(2), lost: fc.boolean(), lagMessages: fc.integer({ min: 0, max: 3 }) }), { maxLength: 40 }),
        (initial, steps) => {
          const truth = new NaiveBook();
          truth.apply({ type: "snapshot", sequence: 1, bids: initial, asks: [] });
          const book = new ClientBook();
          expect(book.apply({ type: "delta", sequence: 2, bids: [], asks: [] })).toBe("ignored"); // before any snapshot
          expect(book.apply(truth.snapshot())).toBe("applied");
          let lostSinceApplied = false;
          let snapshotIn: number | undefined; // messages until the server's answer to a resubscription
          for (const step of steps) {
            const delta: BookMessage = { type: "delta", sequence: truth.sequence + 1, bids: step.bids, asks: step.asks };
            truth.apply(delta);
            if (snapshotIn !== undefined && snapshotIn-- === 0) {
              expect(book.apply(truth.snapshot())).toBe("applied");
              snapshotIn = undefined;
              lostSinceApplied = false;
            } else if (step.lost) {
              if (book.ready) lostSinceApplied = true;
            } else {
              const result = book.apply(delta);
              if (snapshotIn !== undefined) expect(result).toBe("ignored");
              else if (lostSinceApplied) {
                expect(result).toBe("gap");
                snapshotIn = step.lagMessages;
              } else expect(result).toBe("applied");
            }
            // A lost delta is invisible until the next one arrives; from then on, ready means right.
            if (book.ready && !lostSinceApplied) {
              expect(book.sequence).toBe(truth.sequence);
              expect(book.ladder("bids")).toEqual(truth.ladder("bids"));
              expect(book.ladder("asks")).toEqual(truth.ladder("asks"));
            }
          }
        },
      ),
    );
  });

  it("a delta that repeats or skips a sequence is a gap; a new connection waits for a snapshot", () => {
    const book = new ClientBook();
    book.apply({ type: "snapshot", sequence: 4, bids: [["1", "1"]], asks: [] });
    expect(book.apply({ type: "delta", sequence: 4, bids: [["2", "1"]], asks: [] })).toBe("gap");
    expect(book.apply({ type: "delta", sequence: 5, bids: [["2", "1"]], asks: [] })).toBe("ignored");
    expect(book.apply({ type: "snapshot", sequence: 9, bids: [["3", "1"]], asks: [] })).toBe("applied");
    expect(book.apply({ type: "delta", sequence: 11, bids: [], asks: [] })).toBe("gap");
    book.apply({ type: "snapshot", sequence: 12, bids: [["3", "1"]], asks: [] });
    book.invalidate();
    expect(book.apply({ type: "delta", sequence: 13, bids: [["4", "1"]], asks: [] })).toBe("ignored");
    expect(book.ladder("bids")).toEqual([["3", "1"]]);
  });
});
