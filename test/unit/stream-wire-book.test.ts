import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BookMessage, WireBook } from "../../src/streams/wire-book";
import { documentedChecksum } from "../support/checksum";

type Level = [string, string];

/** The naive model: a map per side, sorted by numeric price when read (prices here are exact in binary). */
function model(messages: BookMessage[]) {
  const sides = { bids: new Map<string, string>(), asks: new Map<string, string>() };
  let sequence = 0;
  for (const m of messages) {
    if (m.type === "snapshot") {
      sides.bids.clear();
      sides.asks.clear();
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [p, q] of m[side]) {
        if (Number(q) === 0) sides[side].delete(p);
        else sides[side].set(p, q);
      }
    }
    sequence = m.sequence;
  }
  const sorted = (side: "bids" | "asks") => [...sides[side]].sort(([a], [b]) => (side === "bids" ? Number(b) - Number(a) : Number(a) - Number(b)));
  return { sequence, bids: sorted("bids"), asks: sorted("asks") };
}

const price = fc.integer({ min: 1, max: 400 }).map((n) => `${100 + n}.${String(n % 100).padStart(2, "0")}`);
const quantity = fc.oneof(
  fc.constantFrom("0", "0.000"),
  fc.integer({ min: 1, max: 9999 }).map((n) => `${Math.floor(n / 1000)}.${String(n % 1000).padStart(3, "0")}`),
);
const levels = fc.array(fc.tuple(price, quantity), { maxLength: 30 }) as fc.Arbitrary<Level[]>;

describe("a shard's copy of a book", () => {
  it("after a snapshot and any deltas that follow, it holds exactly the model's book; a snapshot at depth N is its N best levels", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        levels,
        levels,
        fc.array(fc.tuple(levels, levels), { maxLength: 40 }),
        fc.integer({ min: 1, max: 120 }),
        (start, bids, asks, deltas, depth) => {
          const messages: BookMessage[] = [
            { type: "snapshot", sequence: start, bids: bids.filter(([, q]) => Number(q) > 0), asks: asks.filter(([, q]) => Number(q) > 0) },
          ];
          for (const [i, [b, a]] of deltas.entries()) messages.push({ type: "delta", sequence: start + i + 1, bids: b, asks: a });
          const book = new WireBook();
          for (const m of messages) expect(book.apply(m)).toBe(true);
          const expected = model(messages);
          const snapshot = book.snapshot(depth);
          expect(snapshot).toEqual({
            type: "snapshot",
            sequence: expected.sequence,
            time: 0,
            // Of the best 25 a side whatever the depth sent, computed from the documented definition.
            checksum: documentedChecksum(expected.bids, expected.asks),
            bids: expected.bids.slice(0, depth),
            asks: expected.asks.slice(0, depth),
          });
        },
      ),
    );
  });

  it("a delta that does not follow the last sequence is refused and changes nothing", () => {
    const book = new WireBook();
    book.apply({ type: "snapshot", sequence: 10, bids: [["100.00", "1.0"]], asks: [["101.00", "2.0"]] });
    const before = book.snapshot(100);
    expect(book.apply({ type: "delta", sequence: 12, bids: [["100.00", "0"]], asks: [] })).toBe(false);
    expect(book.apply({ type: "delta", sequence: 10, bids: [["100.00", "0"]], asks: [] })).toBe(false);
    expect(book.snapshot(100)).toEqual(before);
    expect(book.apply({ type: "delta", sequence: 11, bids: [["100.00", "0"]], asks: [["101.50", "3.0"]] })).toBe(true);
    expect(book.snapshot(100)).toMatchObject({
      type: "snapshot",
      sequence: 11,
      bids: [],
      asks: [
        ["101.00", "2.0"],
        ["101.50", "3.0"],
      ],
    });
  });

  it("a snapshot replaces everything, whatever its sequence", () => {
    const book = new WireBook();
    book.apply({ type: "snapshot", sequence: 50, bids: [["100.00", "1.0"]], asks: [] });
    book.apply({ type: "snapshot", sequence: 3, bids: [["99.00", "1.0"]], asks: [] });
    expect(book.snapshot(100)).toEqual({
      type: "snapshot",
      sequence: 3,
      time: 0,
      checksum: documentedChecksum([["99.00", "1.0"]], []),
      bids: [["99.00", "1.0"]],
      asks: [],
    });
  });

  it("prices are ordered as decimals, not as strings", () => {
    const book = new WireBook();
    book.apply({
      type: "snapshot",
      sequence: 1,
      bids: [
        ["9.50", "1"],
        ["10.25", "1"],
        ["100.00", "1"],
      ],
      asks: [
        ["1000.1", "1"],
        ["999.9", "1"],
      ],
    });
    const snapshot = book.snapshot(2);
    expect(snapshot.bids.map(([p]) => p)).toEqual(["100.00", "10.25"]);
    expect(snapshot.asks.map(([p]) => p)).toEqual(["999.9", "1000.1"]);
  });
});
