import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BookUpdate, MAX_SNAPSHOT_STEP, OrderBook, RESEND_WINDOW, type UnitLevel } from "../../src/domain/order-book";
import { documentedChecksum } from "../support/checksum";

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
      fc.property(
        levels(quantity),
        fc.array(fc.tuple(levels(deltaQuantity), levels(deltaQuantity), fc.boolean()), { maxLength: 40 }),
        (snapshotLevels, deltas) => {
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
            const best = [book.top().bid?.[0], book.top().ask?.[0]];
            if (best[0] !== undefined && best[1] !== undefined) expect(best[0] < best[1]).toBe(true);
          }
          expect(book.levels(5)).toEqual(model.sorted(5));
        },
      ),
    );
  });

  it("refuses a crossed snapshot, a zero quantity in a snapshot and a repeated price", () => {
    const book = new OrderBook(2, 5);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[101n, 1n]], asks: [[100n, 1n]] }, 0)).toThrow(/crossed/);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[101n, 1n]], asks: [[101n, 1n]] }, 0)).toThrow(/crossed/);
    expect(() => book.apply({ type: "snapshot", sequence: 1, bids: [[99n, 0n]], asks: [] }, 0)).toThrow(/zero quantity/);
    expect(() =>
      book.apply(
        {
          type: "snapshot",
          sequence: 1,
          bids: [
            [99n, 1n],
            [99n, 2n],
          ],
          asks: [],
        },
        0,
      ),
    ).toThrow(/appears twice/);
    expect(book.sequence).toBe(0);
    expect(book.levels(10)).toEqual({ bids: [], asks: [] });
  });

  it("formats levels at the market's scales, best first", () => {
    const book = new OrderBook(2, 5);
    book.apply(
      {
        type: "snapshot",
        sequence: 1,
        bids: [
          [9700010n, 50000n],
          [9700020n, 1n],
        ],
        asks: [[9700100n, 123456n]],
      },
      0,
    );
    expect(book.levels(10)).toEqual({
      bids: [
        ["97000.20", "0.00001"],
        ["97000.10", "0.50000"],
      ],
      asks: [["97001.00", "1.23456"]],
    });
  });
});

describe("a book's checksum (docs/streams.md#checksums)", () => {
  it("after every update, applied or replayed, is the documented checksum of its best 25 levels a side, at its scales (property: a level's text is made once while it stands, so a quantity that changes back, a level removed and set again, a side emptied)", () => {
    const small = fc.bigInt({ min: 1n, max: 4n });
    const sideLevels = (q: fc.Arbitrary<bigint>, lowest: bigint) =>
      fc.uniqueArray(fc.tuple(fc.bigInt({ min: lowest, max: lowest + 60n }), q), { selector: ([p]) => p, maxLength: 40 });
    fc.assert(
      fc.property(
        sideLevels(small, 1n),
        sideLevels(small, 100n),
        fc.array(fc.tuple(sideLevels(fc.oneof(small, fc.constant(0n)), 1n), sideLevels(fc.oneof(small, fc.constant(0n)), 100n), fc.boolean()), {
          maxLength: 30,
        }),
        (bids, asks, deltas) => {
          const book = new OrderBook(2, 3);
          book.apply({ type: "snapshot", sequence: 1, bids, asks }, 1);
          const check = (what: string) => {
            const { bids: b, asks: a } = book.levels(25);
            expect(book.checksum(), `${what}: the checksum at sequence ${book.sequence}`).toBe(documentedChecksum(b, a));
          };
          check("the snapshot");
          for (const [deltaBids, deltaAsks, replayed] of deltas) {
            const update = { type: "delta" as const, sequence: book.sequence + 1, bids: deltaBids, asks: deltaAsks };
            // Bids stay below 62 and asks from 100: never crossed, so every delta applies.
            if (replayed) book.replay(update, 2);
            else book.apply(update, 2);
            check(replayed ? "a replayed delta" : "an applied delta");
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a book's formatted texts are bounded (docs/security.md#bounded-memory)", () => {
  it("a book whose best levels walk through 1,000 prices holds at most 8 × 25 level texts, and its checksum stays the documented one through every clear", () => {
    const book = new OrderBook(2, 3);
    book.apply({ type: "snapshot", sequence: 1, bids: Array.from({ length: 30 }, (_, i) => [BigInt(1_000 + i), 1n] as const), asks: [[100_000n, 1n]] }, 1);
    let mostHeld = 0;
    for (let step = 0; step < 1_000; step++) {
      // A new best bid above the last, and the lowest of the top gone: the top 25 move one price a step.
      const update = {
        type: "delta" as const,
        sequence: book.sequence + 1,
        bids: [[BigInt(1_030 + step), 2n] as const, [BigInt(1_000 + step), 0n] as const],
        asks: [],
      };
      book.apply(update, 2);
      const { bids, asks } = book.levels(25);
      expect(book.checksum(), `the checksum at step ${step}`).toBe(documentedChecksum(bids, asks));
      const held = (book as unknown as { levelTexts: Map<bigint, unknown> }).levelTexts.size;
      expect(held, `level texts held at step ${step}`).toBeLessThanOrEqual(200);
      mostHeld = Math.max(mostHeld, held);
    }
    expect(mostHeld, "the bound was reached: texts were cleared on the way").toBe(200);
  });

  it("a book of 31 levels whose price walks through 5,000 prices holds at most 256 formatted prices — twice its levels, at least 256 — not 20,000 whatever its depth (fails before: ~2 MB a drifting market)", () => {
    const book = new OrderBook(2, 3);
    book.apply({ type: "snapshot", sequence: 1, bids: Array.from({ length: 30 }, (_, i) => [BigInt(1_000 + i), 1n] as const), asks: [[100_000n, 1n]] }, 1);
    const held = () => (book as unknown as { priceTexts: Map<bigint, string> }).priceTexts.size;
    let mostHeld = 0;
    for (let step = 0; step < 5_000; step++) {
      book.apply({ type: "delta", sequence: book.sequence + 1, bids: [[BigInt(1_030 + step), 2n] as const, [BigInt(1_000 + step), 0n] as const], asks: [] }, 2);
      const { bids, asks } = book.levels(30);
      expect(bids[0], `the best bid at step ${step}`).toEqual([((1_030 + step) / 100).toFixed(2), "0.002"]);
      expect(book.checksum(), `the checksum at step ${step}`).toBe(documentedChecksum(book.levels(25).bids, asks));
      expect(held(), `formatted prices held at step ${step}`).toBeLessThanOrEqual(256);
      mostHeld = Math.max(mostHeld, held());
    }
    expect(mostHeld, "the bound was reached: prices were cleared on the way").toBe(256);
  });
});

describe("a book's sequence never goes back (publisher rules)", () => {
  const snapshot = (sequence: number, bid = 100n): BookUpdate => ({ type: "snapshot", sequence, bids: [[bid, 1n]], asks: [[200n, 1n]] });
  const codeOf = (work: () => unknown) => {
    try {
      work();
    } catch (error) {
      return (error as { code?: string }).code;
    }
    return "applied";
  };

  it("an identical replay is a duplicate no-op; a different update at the same sequence or an older one is refused", () => {
    const book = new OrderBook(0, 0);
    expect(book.apply(snapshot(10), 1)).toBe("applied");
    expect(book.apply(snapshot(10), 2), "replayed snapshot").toBe("duplicate");
    expect(book.updatedAt).toBe(1);
    expect(
      codeOf(() => book.apply(snapshot(10, 99n), 3)),
      "same sequence, other levels",
    ).toBe("STALE_SEQUENCE");
    expect(
      codeOf(() => book.apply(snapshot(9), 3)),
      "older snapshot",
    ).toBe("STALE_SEQUENCE");
    const delta: BookUpdate = { type: "delta", sequence: 11, bids: [[101n, 2n]], asks: [] };
    expect(book.apply(delta, 4)).toBe("applied");
    expect(book.apply(delta, 5), "replayed delta").toBe("duplicate");
    expect(book.apply(snapshot(10), 6), "an applied snapshot resent after a delta: recognised").toBe("duplicate");
    expect(
      codeOf(() => book.apply({ ...snapshot(10), bids: [[50n, 1n]] }, 6)),
      "a different update at an applied sequence",
    ).toBe("STALE_SEQUENCE");
    expect([book.sequence, book.top().bid?.[0]]).toEqual([11, 101n]);
  });

  it(`a resend of any of the last ${RESEND_WINDOW} applied updates is a duplicate that changes nothing; older ones are STALE_SEQUENCE`, () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 * RESEND_WINDOW }), fc.integer({ min: 0, max: 3 * RESEND_WINDOW }), (applied, pick) => {
        const book = new OrderBook(0, 0);
        const delta = (n: number): BookUpdate => ({ type: "delta", sequence: n, bids: [[BigInt(1 + (n % 7)), BigInt(n)]], asks: [] });
        for (let n = 1; n <= applied; n++) book.apply(delta(n), 0);
        const before = [book.sequence, book.levels(10)];
        const sequence = 1 + (pick % applied);
        let outcome: string | undefined;
        try {
          outcome = book.apply(delta(sequence), 0);
        } catch (error) {
          outcome = (error as { code?: string }).code;
        }
        expect(outcome, `resend of ${sequence} after ${applied}`).toBe(applied - sequence < RESEND_WINDOW ? "duplicate" : "STALE_SEQUENCE");
        expect([book.sequence, book.levels(10)], "nothing changed").toEqual(before);
      }),
      { numRuns: 200 },
    );
  });

  it("no accepted update leaves the market without a next sequence", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })), { maxLength: 30 }), (updates) => {
        const book = new OrderBook(0, 0);
        for (const [isSnapshot, sequence] of updates) {
          const before = book.sequence;
          const update: BookUpdate = isSnapshot ? snapshot(sequence) : { type: "delta", sequence: before + 1, bids: [], asks: [] };
          const outcome = codeOf(() => book.apply(update, 0));
          expect(book.sequence, `after ${update.type} ${update.sequence}: ${outcome}`).toBeGreaterThanOrEqual(before);
          expect(book.sequence - before).toBeLessThanOrEqual(MAX_SNAPSHOT_STEP);
        }
        // There is always a next delta.
        expect(codeOf(() => book.apply({ type: "delta", sequence: book.sequence + 1, bids: [], asks: [] }, 0))).toBe("applied");
      }),
    );
  });

  it("a snapshot at the largest sequence is refused as a jump, and the market moves on", () => {
    const book = new OrderBook(0, 0);
    book.apply(snapshot(5), 0);
    expect(codeOf(() => book.apply(snapshot(Number.MAX_SAFE_INTEGER), 0))).toBe("SEQUENCE_GAP");
    expect(book.apply(snapshot(5 + MAX_SNAPSHOT_STEP), 0)).toBe("applied");
    expect(book.apply({ type: "delta", sequence: 6 + MAX_SNAPSHOT_STEP, bids: [], asks: [] }, 0)).toBe("applied");
  });
});
