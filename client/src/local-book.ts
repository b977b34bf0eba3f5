import { bookChecksum, CHECKSUM_DEPTH, type Level } from "./checksum.js";
import { compareDecimal, isZeroDecimal } from "./decimal.js";

/** A message of a `book.{SYMBOL}` stream. */
export interface BookMessage {
  type: "snapshot" | "delta";
  /**
   * A delta's first sequence: it carries the merged changes of `firstSequence`…`sequence`
   * (the service sends at most one delta per market per 100 ms). Absent: `sequence` alone.
   */
  firstSequence?: number;
  sequence: number;
  /** When the market applied it (Unix ms). */
  time?: number;
  /** CRC-32 of the book after this message (see {@link bookChecksum}). */
  checksum?: number;
  bids: Level[];
  asks: Level[];
}

/**
 * What {@link LocalBook.apply} did with a message:
 * - `applied`: the book now shows the message's sequence;
 * - `gap`: a delta did not continue the book, or the book after it failed the message's
 *   checksum; the book is out of sync until the next snapshot (ask for one: resubscribe);
 * - `ignored`: a delta while out of sync (before the first snapshot, or after a gap): it must not
 *   cause another resubscription.
 */
export type ApplyResult = "applied" | "gap" | "ignored";

/**
 * A local copy of one market's order book, kept from a `book.{SYMBOL}` stream: a snapshot
 * replaces it, each delta must start at the last sequence + 1 (`firstSequence`) and sets (or with quantity `"0"`
 * removes) levels, and the checksum after each message proves the copy. Prices and quantities
 * stay the service's exact strings and are ordered exactly. Pure: no I/O, so it works anywhere
 * and {@link MarketStream.book} drives it from the wire.
 *
 * @example
 * const book = new LocalBook();
 * book.apply({ type: "snapshot", sequence: 7, bids: [["100.0", "1"]], asks: [["101.0", "2"]] });
 * book.bestBid(); // ["100.0", "1"]
 */
export class LocalBook {
  /** The sequence of the last message applied (0 before the first snapshot). */
  sequence = 0;
  /** The market's time of that message (Unix ms), when the message carried it. */
  time: number | undefined;
  /** True while the book continues a snapshot with no gap. */
  synced = false;
  /** Out of sync only because the connection was lost: a delta that continues `sequence` (or the service's word) syncs it again. */
  resumable = false;
  private readonly levels = { bids: new Map<string, string>(), asks: new Map<string, string>() };
  /** Sorted ladders, rebuilt on the first read after a change. */
  private sorted: { bids?: Level[]; asks?: Level[] } = {};

  apply(message: BookMessage): ApplyResult {
    if (message.type === "delta") {
      const continues = (message.firstSequence ?? message.sequence) === this.sequence + 1;
      if (!this.synced && !(this.resumable && continues)) return "ignored";
      this.resumable = false;
      if (!continues) {
        this.synced = false;
        return "gap";
      }
      this.synced = true;
    } else {
      this.levels.bids.clear();
      this.levels.asks.clear();
      this.synced = true;
      this.resumable = false;
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of message[side]) {
        if (isZeroDecimal(quantity)) this.levels[side].delete(price);
        else this.levels[side].set(price, quantity);
      }
    }
    this.sorted = {};
    this.sequence = message.sequence;
    this.time = message.time;
    if (message.checksum !== undefined && this.checksum() !== message.checksum) {
      this.synced = false;
      return "gap";
    }
    return "applied";
  }

  /** Forgets continuity: deltas are ignored until the next snapshot. */
  invalidate(): void {
    this.synced = false;
    this.resumable = false;
  }

  /**
   * The connection was lost: out of sync, but the book may be continued from its sequence on the
   * next connection (docs/streams.md#resuming) by a delta that follows it or by {@link resume}.
   */
  suspend(): void {
    if (!this.synced && !this.resumable) return;
    this.synced = false;
    this.resumable = true;
  }

  /** The service said nothing was missed since `sequence`: in sync again if the book is still there. */
  resume(sequence: number): boolean {
    if (!this.resumable || sequence !== this.sequence) return false;
    this.resumable = false;
    this.synced = true;
    return true;
  }

  /** Best first: bids from the highest price, asks from the lowest; at most `depth` levels. */
  ladder(side: "bids" | "asks", depth = Number.POSITIVE_INFINITY): Level[] {
    const sorted = (this.sorted[side] ??= [...this.levels[side]].sort(
      side === "bids" ? (a, b) => compareDecimal(b[0], a[0]) : (a, b) => compareDecimal(a[0], b[0]),
    ));
    return depth >= sorted.length ? sorted.slice() : sorted.slice(0, depth);
  }

  bids(depth?: number): Level[] {
    return this.ladder("bids", depth);
  }

  asks(depth?: number): Level[] {
    return this.ladder("asks", depth);
  }

  /** The best bid `[price, quantity]`, or undefined when the side is empty. */
  bestBid(): Level | undefined {
    return this.ladder("bids", 1)[0];
  }

  bestAsk(): Level | undefined {
    return this.ladder("asks", 1)[0];
  }

  /** The checksum of the book as it stands (compare with `GET /api/orderbook`'s). */
  checksum(): number {
    return bookChecksum(this.ladder("bids", CHECKSUM_DEPTH), this.ladder("asks", CHECKSUM_DEPTH));
  }
}
