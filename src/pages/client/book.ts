import { compare, formatDecimal, isZero, parseDecimal, subtract } from "../../core/decimal";
import { bookChecksum, CHECKSUM_DEPTH } from "../../market/book-checksum";

/**
 * The market page's order book, pure: snapshot and deltas with gap detection, sorted ladders
 * and cumulative depth. Runs in the browser; unit-tested on its own.
 */
export type Level = [price: string, quantity: string];

export interface BookMessage {
  type: "snapshot" | "delta";
  sequence: number;
  /** CRC-32 of the best 25 levels a side once applied (docs/streams.md#checksums). */
  checksum?: number;
  bids: Level[];
  asks: Level[];
}

/**
 * What `apply` did: `applied`; `gap` — a delta did not continue the book, or the book after it
 * does not match the message's checksum, and the book is now stale
 * (the caller resubscribes for a new snapshot, once); `ignored` — a delta while no snapshot
 * is held (before the first one, or after a gap until the new one), which must not trigger
 * another resubscription: the server allows 10 client messages a second.
 */
export type ApplyResult = "applied" | "gap" | "ignored";

/** Orders two decimal strings exactly (no float rounding of long prices). */
export function compareDecimal(a: string, b: string): number {
  return compare(parseDecimal(a), parseDecimal(b));
}

/** `a − b` for decimal strings, exactly, at the larger of their scales (the spread, for display). */
export function subtractDecimal(a: string, b: string): string {
  return formatDecimal(subtract(parseDecimal(a), parseDecimal(b)));
}

export class ClientBook {
  sequence = 0;
  /** True while the book continues a snapshot without a gap. */
  ready = false;
  /** Price → quantity, both exactly as the service wrote them. */
  readonly bids = new Map<string, string>();
  readonly asks = new Map<string, string>();

  apply(message: BookMessage): ApplyResult {
    if (message.type === "delta") {
      if (!this.ready) return "ignored";
      if (message.sequence !== this.sequence + 1) {
        this.ready = false;
        return "gap";
      }
    } else {
      this.bids.clear();
      this.asks.clear();
      this.ready = true;
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of message[side]) {
        if (isZero(parseDecimal(quantity))) this[side].delete(price);
        else this[side].set(price, quantity);
      }
    }
    this.sequence = message.sequence;
    if (message.checksum !== undefined && bookChecksum(this.ladder("bids", CHECKSUM_DEPTH), this.ladder("asks", CHECKSUM_DEPTH)) !== message.checksum) {
      this.ready = false;
      return "gap";
    }
    return "applied";
  }

  /** Forgets continuity (a new connection): deltas are ignored until the next snapshot. */
  invalidate(): void {
    this.ready = false;
  }

  /** Best first (bids descending, asks ascending), as exact strings for display. */
  ladder(side: "bids" | "asks", depth = Infinity): Level[] {
    const levels = [...this[side]];
    levels.sort((a, b) => (side === "bids" ? compareDecimal(b[0], a[0]) : compareDecimal(a[0], b[0])));
    return levels.slice(0, depth);
  }

  /** Cumulative quantity from the touch outwards, for the depth chart (numbers: it is a drawing). */
  depth(side: "bids" | "asks", levels = 50): [price: number, cumulative: number][] {
    let total = 0;
    return this.ladder(side, levels).map(([price, quantity]) => [Number(price), (total += Number(quantity))]);
  }
}
