import type { BookUpdate, UnitLevel } from "../domain/order-book";

/** A stream sends at most one book message and one trades message per market per this interval (docs/streams.md#conflation). */
export const CONFLATE_MS = 100;

/** The book part of an interval: a delta of the merged levels, or a snapshot (the market then sends its whole book). */
export interface ConflatedBook {
  type: "snapshot" | "delta";
  /** The first sequence the message covers: the previous message's `sequence` + 1. */
  firstSequence: number;
  sequence: number;
  /** For a delta: every level the interval changed, at its final quantity (0 removes it). */
  bids: UnitLevel[];
  asks: UnitLevel[];
  /**
   * For a snapshot: every price any update of the interval named (the snapshot's levels too), so
   * a copy at `firstSequence − 1` can be brought to `sequence` level by level (docs/binance.md#a-local-order-book).
   */
  touched?: { bids: bigint[]; asks: bigint[] };
}

/**
 * One market's stream changes of the current interval, merged (pure). Book updates merge by
 * price, the last quantity winning, so applying the merged delta to a book at `firstSequence − 1`
 * gives the book at `sequence` exactly; a snapshot in the interval makes the interval's message a
 * snapshot. Trades are kept in order.
 */
export class Conflation<T> {
  private book:
    | {
        firstSequence: number;
        sequence: number;
        snapshot: boolean;
        bids: Map<bigint, bigint>;
        asks: Map<bigint, bigint>;
        touched: { bids: Set<bigint>; asks: Set<bigint> };
      }
    | undefined;
  private trades: T[] = [];

  /** Adds applied book updates, in the order they were applied. */
  addBook(updates: readonly BookUpdate[]): void {
    for (const update of updates) {
      this.book ??= {
        firstSequence: update.sequence,
        sequence: update.sequence,
        snapshot: false,
        bids: new Map(),
        asks: new Map(),
        touched: { bids: new Set(), asks: new Set() },
      };
      const book = this.book;
      book.sequence = update.sequence;
      if (update.type === "snapshot") {
        // The prices merged so far were touched too.
        for (const side of ["bids", "asks"] as const) for (const price of book[side].keys()) book.touched[side].add(price);
        book.snapshot = true;
        book.bids.clear();
        book.asks.clear();
      }
      if (book.snapshot) {
        // The snapshot sent at the end shows these; what they touched is kept.
        for (const [price] of update.bids) book.touched.bids.add(price);
        for (const [price] of update.asks) book.touched.asks.add(price);
        continue;
      }
      for (const [price, quantity] of update.bids) book.bids.set(price, quantity);
      for (const [price, quantity] of update.asks) book.asks.set(price, quantity);
    }
  }

  addTrades(trades: readonly T[]): void {
    this.trades.push(...trades);
  }

  /** The interval's messages, and a fresh interval. */
  take(): { book?: ConflatedBook; trades: T[] } {
    const { book, trades } = this;
    this.book = undefined;
    this.trades = [];
    if (!book) return { trades };
    return {
      book: {
        type: book.snapshot ? "snapshot" : "delta",
        firstSequence: book.firstSequence,
        sequence: book.sequence,
        bids: [...book.bids],
        asks: [...book.asks],
        ...(book.snapshot && { touched: { bids: [...book.touched.bids], asks: [...book.touched.asks] } }),
      },
      trades,
    };
  }
}

/**
 * Trades in `tradeId` order as the trades stream sends them: those of one CONFLATE_MS window of
 * their time in one message (a replay's and a catch-up's messages, as a live subscriber got them).
 */
export function tradeWindows<T extends { time: number }>(trades: readonly T[]): T[][] {
  const windows: T[][] = [];
  for (let i = 0; i < trades.length; ) {
    const window = Math.floor(trades[i]!.time / CONFLATE_MS);
    let j = i;
    while (j < trades.length && Math.floor(trades[j]!.time / CONFLATE_MS) === window) j++;
    windows.push(trades.slice(i, j));
    i = j;
  }
  return windows;
}
