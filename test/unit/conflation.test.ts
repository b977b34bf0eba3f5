import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LocalBook } from "../../client/src/index";
import { formatUnits } from "../../src/core/decimal";
import { bookChecksum } from "../../src/domain/book-checksum";
import { type BookUpdate, OrderBook, type UnitLevel } from "../../src/domain/order-book";
import { Conflation } from "../../src/streams/conflation";

const SCALE = 2;
const wire = (levels: readonly UnitLevel[]) => levels.map(([p, q]) => [formatUnits(p, SCALE), q === 0n ? "0" : formatUnits(q, SCALE)] as [string, string]);

/** Updates a book takes: bids below 500 units, asks from 500, so the book never crosses; sometimes a snapshot. */
const updates = fc.array(
  fc.record({
    snapshot: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
    bids: fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 499 }), fc.integer({ min: 0, max: 50 })), { selector: ([p]) => p, maxLength: 6 }),
    asks: fc.uniqueArray(fc.tuple(fc.integer({ min: 500, max: 999 }), fc.integer({ min: 0, max: 50 })), { selector: ([p]) => p, maxLength: 6 }),
    boundary: fc.boolean(),
  }),
  { minLength: 1, maxLength: 60 },
);

describe("conflation (docs/streams.md#conflation)", () => {
  it("any updates, conflated at any interval boundaries, give a client the same book and checksum as every update one by one (property)", () => {
    fc.assert(
      fc.property(updates, (raw) => {
        const truth = new OrderBook(SCALE, SCALE);
        const client = new LocalBook();
        const conflation = new Conflation<never>();
        // The client starts from the market's (empty) base at sequence 0.
        client.apply({ type: "snapshot", sequence: 0, bids: [], asks: [] });
        let sent = 0;
        const flush = () => {
          const { book } = conflation.take();
          if (!book) return;
          const levels = truth.levels(Number.MAX_SAFE_INTEGER);
          const checksum = bookChecksum(levels.bids, levels.asks);
          const message =
            book.type === "snapshot"
              ? { type: "snapshot" as const, sequence: book.sequence, checksum, ...levels }
              : { type: "delta" as const, firstSequence: book.firstSequence, sequence: book.sequence, checksum, bids: wire(book.bids), asks: wire(book.asks) };
          expect(client.apply(message), `message ${sent} (${message.type} ${book.firstSequence}…${book.sequence})`).toBe("applied");
          sent += 1;
        };
        raw.forEach((u, i) => {
          const snapshot = u.snapshot || i === 0;
          const toLevels = (levels: [number, number][]) => levels.filter(([, q]) => !snapshot || q > 0).map(([p, q]) => [BigInt(p), BigInt(q)] as UnitLevel);
          const update: BookUpdate = { type: snapshot ? "snapshot" : "delta", sequence: i + 1, bids: toLevels(u.bids), asks: toLevels(u.asks) };
          truth.apply(update, 0);
          conflation.addBook([update]);
          if (u.boundary) flush();
        });
        flush();
        const levels = truth.levels(Number.MAX_SAFE_INTEGER);
        expect({ sequence: client.sequence, bids: client.bids(), asks: client.asks() }).toEqual({ sequence: truth.sequence, ...levels });
        expect(client.checksum()).toBe(bookChecksum(levels.bids, levels.asks));
        // At most one message per interval: never more messages than boundaries + 1.
        expect(sent).toBeLessThanOrEqual(raw.filter((u) => u.boundary).length + 1);
      }),
      { numRuns: 300 },
    );
  });

  it("trades come out once each, in order, one batch per interval", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.boolean()), { maxLength: 40 }), (batches) => {
        const conflation = new Conflation<number>();
        const out: number[][] = [];
        let next = 0;
        for (const [count, boundary] of batches) {
          conflation.addTrades(Array.from({ length: count }, () => next++));
          if (boundary) out.push(conflation.take().trades);
        }
        out.push(conflation.take().trades);
        expect(out.flat()).toEqual(Array.from({ length: next }, (_, i) => i));
      }),
    );
  });
});
