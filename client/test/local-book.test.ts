import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Decimal, levelsAt } from "../../test/support/book-levels";
import { type BookMessage, bookChecksum, compareDecimal, type Level, LocalBook } from "../src/index.js";

/** The naive model (the service's book): two plain maps, sorted with decimal.js only when read. */
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

  checksum(): number {
    return bookChecksum(this.ladder("bids"), this.ladder("asks"));
  }

  snapshot(): BookMessage {
    return { type: "snapshot", sequence: this.sequence, checksum: this.checksum(), bids: this.ladder("bids"), asks: this.ladder("asks") };
  }
}

describe("the client's LocalBook", () => {
  it("orders decimal strings exactly as decimal.js does", () => {
    const decimal = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.integer({ min: 0, max: 18 }))
      .map(([units, scale]) => new Decimal(units.toString()).div(new Decimal(10).pow(scale)).toFixed(scale));
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        expect(Math.sign(compareDecimal(a, b)), `${a} vs ${b}`).toBe(new Decimal(a).cmp(b));
      }),
    );
    expect(compareDecimal("0.1", "0.10")).toBe(0);
    expect(compareDecimal("100000000000000000001", "100000000000000000000")).toBeGreaterThan(0);
    expect(compareDecimal("007.5", "7.50")).toBe(0);
  });

  it("follows snapshot and deltas like the naive model, sorted best first, each message's checksum proving it", () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 0, max: 8 })
          .chain((scale) => fc.tuple(levelsAt(scale), levelsAt(scale), fc.array(fc.tuple(levelsAt(scale), levelsAt(scale)), { maxLength: 25 }))),
        ([snapshotBids, snapshotAsks, deltas]) => {
          const book = new LocalBook();
          const model = new NaiveBook();
          model.apply({ type: "snapshot", sequence: 10, bids: snapshotBids, asks: snapshotAsks });
          expect(book.apply({ type: "snapshot", sequence: 10, checksum: model.checksum(), bids: snapshotBids, asks: snapshotAsks })).toBe("applied");
          deltas.forEach(([bids, asks], i) => {
            model.apply({ type: "delta", sequence: 11 + i, bids, asks });
            expect(book.apply({ type: "delta", sequence: 11 + i, checksum: model.checksum(), bids, asks }), `delta ${11 + i}`).toBe("applied");
          });
          expect(book.sequence).toBe(model.sequence);
          expect(book.bids()).toEqual(model.ladder("bids"));
          expect(book.asks()).toEqual(model.ladder("asks"));
          expect(book.bestBid()).toEqual(model.ladder("bids")[0]);
          expect(book.asks(3)).toEqual(model.ladder("asks").slice(0, 3));
          expect(book.checksum()).toBe(model.checksum());
        },
      ),
    );
  });

  it("over a lossy stream with reconnects and altered deltas, reports each gap once, ignores deltas until the next snapshot, and is right whenever synced", () => {
    const step = fc.record({
      bids: levelsAt(2),
      asks: levelsAt(2),
      /** What happens to this delta on its way: arrives, is lost, arrives altered (checksum still the true one), or the connection drops. */
      fate: fc.constantFrom("arrives", "arrives", "arrives", "lost", "altered", "reconnect"),
      lagMessages: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(levelsAt(2), fc.array(step, { maxLength: 40 }), (initial, steps) => {
        const truth = new NaiveBook();
        truth.apply({ type: "snapshot", sequence: 1, bids: initial, asks: [] });
        const book = new LocalBook();
        expect(book.apply({ type: "delta", sequence: 2, bids: [], asks: [] })).toBe("ignored"); // before any snapshot
        expect(book.apply(truth.snapshot())).toBe("applied");
        let lostSinceApplied = false;
        let snapshotIn: number | undefined; // messages until the answer to a resubscription or a reconnect
        for (const { bids, asks, fate, lagMessages } of steps) {
          const delta: BookMessage = { type: "delta", sequence: truth.sequence + 1, bids, asks };
          truth.apply(delta);
          delta.checksum = truth.checksum();
          if (snapshotIn !== undefined && snapshotIn-- === 0) {
            expect(book.apply(truth.snapshot())).toBe("applied");
            snapshotIn = undefined;
            lostSinceApplied = false;
          } else if (fate === "reconnect") {
            book.invalidate();
            expect(book.apply(delta), "a delta on a new connection before its snapshot").toBe("ignored");
            snapshotIn ??= lagMessages;
          } else if (fate === "lost") {
            if (book.synced) lostSinceApplied = true;
          } else {
            // Altered: a bid above every generated price (≤ 4.00) slipped in, so the best 25 differ.
            const altered = fate === "altered" ? { ...delta, bids: [...bids, ["999.99", "1.234"] as Level] } : delta;
            const result = book.apply(altered);
            if (snapshotIn !== undefined) expect(result).toBe("ignored");
            else if (lostSinceApplied || fate === "altered") {
              expect(result, lostSinceApplied ? "the delta after a lost one" : "an altered delta fails its checksum").toBe("gap");
              snapshotIn = lagMessages;
            } else expect(result).toBe("applied");
          }
          // A lost delta is invisible until the next one arrives; from then on, synced means right.
          if (book.synced && !lostSinceApplied) {
            expect(book.sequence).toBe(truth.sequence);
            expect(book.bids()).toEqual(truth.ladder("bids"));
            expect(book.asks()).toEqual(truth.ladder("asks"));
          }
        }
      }),
    );
  });

  it("a delta that repeats or skips a sequence is a gap; a new connection waits for a snapshot", () => {
    const book = new LocalBook();
    book.apply({ type: "snapshot", sequence: 4, bids: [["1", "1"]], asks: [] });
    expect(book.apply({ type: "delta", sequence: 4, bids: [["2", "1"]], asks: [] })).toBe("gap");
    expect(book.apply({ type: "delta", sequence: 5, bids: [["2", "1"]], asks: [] })).toBe("ignored");
    expect(book.apply({ type: "snapshot", sequence: 9, bids: [["3", "1"]], asks: [] })).toBe("applied");
    expect(book.apply({ type: "delta", sequence: 11, bids: [], asks: [] })).toBe("gap");
    book.apply({ type: "snapshot", sequence: 12, bids: [["3", "1"]], asks: [] });
    book.invalidate();
    expect(book.apply({ type: "delta", sequence: 13, bids: [["4", "1"]], asks: [] })).toBe("ignored");
    expect(book.bids()).toEqual([["3", "1"]]);
  });

  it("a suspended book (lost connection) is continued by a delta that follows it or by the service's word, never by one that does not", () => {
    const suspended = () => {
      const book = new LocalBook();
      book.apply({ type: "snapshot", sequence: 20, bids: [["3", "1"]], asks: [] });
      book.suspend();
      expect([book.synced, book.resumable]).toEqual([false, true]);
      return book;
    };
    const continued = suspended();
    expect(continued.apply({ type: "delta", firstSequence: 21, sequence: 23, bids: [["4", "2"]], asks: [] })).toBe("applied");
    expect([continued.synced, continued.resumable, continued.sequence]).toEqual([true, false, 23]);

    const skipped = suspended();
    expect(skipped.apply({ type: "delta", firstSequence: 22, sequence: 22, bids: [["4", "2"]], asks: [] }), "a delta past the book waits for a snapshot").toBe(
      "ignored",
    );
    expect(skipped.bids()).toEqual([["3", "1"]]);
    expect(skipped.resume(21), "resumed only at its own sequence").toBe(false);
    expect(skipped.resume(20)).toBe(true);
    expect(skipped.synced).toBe(true);

    const replaced = suspended();
    expect(replaced.apply({ type: "snapshot", sequence: 40, bids: [["5", "1"]], asks: [] })).toBe("applied");
    expect([replaced.synced, replaced.resumable, replaced.resume(40)]).toEqual([true, false, false]);

    const never = new LocalBook();
    never.suspend();
    expect(never.resumable, "a book that never synced has nothing to resume").toBe(false);
  });

  it("computes the worked checksum of docs/streams.md", () => {
    expect(
      bookChecksum(
        [
          ["97000.10", "0.50000"],
          ["96999.00", "1.00000"],
        ],
        [["97001.00", "0.25000"]],
      ),
    ).toBe(926182225);
  });
});
