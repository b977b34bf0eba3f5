import { compare, parseDecimal } from "../core/decimal";
import { bookChecksum } from "../domain/book-checksum";
import type { WireLevel } from "../domain/order-book";

export interface BookMessage {
  type: "snapshot" | "delta";
  /**
   * A delta's first sequence: it covers `firstSequence`…`sequence` (docs/streams.md#conflation). On
   * a snapshot, it says the snapshot continues the previous message (a publisher's, conflated).
   */
  firstSequence?: number;
  sequence: number;
  /** When the market applied it (Unix ms). */
  time?: number;
  /** A continuing snapshot's prices touched in its interval (src/streams/conflation.ts): the shard sends it on as a delta of these and every changed level. */
  touched?: { bids: string[]; asks: string[] };
  /** CRC-32 of the best 25 levels a side once it is applied (docs/streams.md#checksums). */
  checksum?: number;
  bids: WireLevel[];
  asks: WireLevel[];
}

/**
 * A shard's copy of one market's book, kept from the market's snapshot and deltas, so every
 * new subscriber gets a snapshot that the following deltas continue exactly.
 */
export class WireBook {
  sequence = 0;
  time = 0;
  private readonly sides = { bids: new Map<string, string>(), asks: new Map<string, string>() };
  private sorted: { bids: WireLevel[]; asks: WireLevel[] } | undefined;

  /** Applies a message; false when a delta does not follow (the copy must be rebuilt). */
  apply(message: BookMessage): boolean {
    if (message.type === "delta" && (message.firstSequence ?? message.sequence) !== this.sequence + 1) return false;
    if (message.type === "snapshot") {
      this.sides.bids.clear();
      this.sides.asks.clear();
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of message[side]) {
        if (/^0(\.0*)?$/.test(quantity)) this.sides[side].delete(price);
        else this.sides[side].set(price, quantity);
      }
    }
    this.sequence = message.sequence;
    this.time = message.time ?? this.time;
    this.sorted = undefined;
    return true;
  }

  /**
   * The levels that bring `earlier` — or any book between it and this one, when `touched` names
   * every price changed in between — to this book: each level that differs from `earlier` or was
   * touched, at its quantity here ("0" where it is gone).
   */
  changesSince(
    earlier: WireBook,
    touched: { bids: readonly string[]; asks: readonly string[] } = { bids: [], asks: [] },
  ): { bids: WireLevel[]; asks: WireLevel[] } {
    const diff = (side: "bids" | "asks"): WireLevel[] => {
      const now = this.sides[side];
      const then = earlier.sides[side];
      const changed = new Map<string, string>();
      for (const [price, quantity] of now) if (then.get(price) !== quantity) changed.set(price, quantity);
      for (const price of then.keys()) if (!now.has(price)) changed.set(price, "0");
      for (const price of touched[side]) changed.set(price, now.get(price) ?? "0");
      return [...changed];
    };
    return { bids: diff("bids"), asks: diff("asks") };
  }

  snapshot(depth: number): BookMessage {
    if (!this.sorted) {
      const order = (side: "bids" | "asks") =>
        [...this.sides[side]].sort(([a], [b]) => (side === "bids" ? compare(parseDecimal(b), parseDecimal(a)) : compare(parseDecimal(a), parseDecimal(b))));
      this.sorted = { bids: order("bids"), asks: order("asks") };
    }
    const { bids, asks } = this.sorted;
    return {
      type: "snapshot",
      sequence: this.sequence,
      time: this.time,
      checksum: bookChecksum(bids, asks),
      bids: bids.slice(0, depth),
      asks: asks.slice(0, depth),
    };
  }
}
