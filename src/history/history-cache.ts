import { BoundedMap, textBytes } from "../core/bounded-map";
import type { OrderBook } from "../domain/order-book";
import type { BookEntry, BookSegment } from "../writes/book-entries";

/** A host's decoded open segments, at most this many bytes (estimated) for all its markets together. */
const SEGMENTS_MAX_BYTES = 24 * 1024 * 1024;
/** A host's decoded closed segments (read here only until R2 and the index have them), at most this many bytes. */
const CLOSED_MAX_BYTES = 16 * 1024 * 1024;
/** A host's final history answers (texts), at most this many bytes. */
const ANSWERS_MAX_BYTES = 8 * 1024 * 1024;
/** Books where a replay's or catch-up's page ended inside a segment, for its next page: at most this many bytes. */
const REPLAY_BOOKS_MAX_BYTES = 8 * 1024 * 1024;

/** A market's open segment as decoded for its history reads, through the log's record `logN`. */
export interface OpenSegment {
  snapshotN: number;
  logN: number;
  /** The log ring's mark when it was read through `logN`: the records after are in later rows. */
  mark: number;
  segment: BookSegment;
  bytes: number;
}

/** About what a decoded level and entry hold in an isolate (two bigints in an array; an entry's object and array). */
const LEVEL_BYTES = 120;
const ENTRY_BYTES = 200;

/** About the bytes entries hold in memory, decoded. */
export function entriesBytes(entries: readonly BookEntry[]): number {
  let bytes = 0;
  for (const entry of entries) {
    bytes += ENTRY_BYTES;
    for (const update of entry.updates) bytes += LEVEL_BYTES * (update.bids.length + update.asks.length);
  }
  return bytes;
}

/** About the bytes a book holds in memory. */
export function bookBytes(book: OrderBook): number {
  return LEVEL_BYTES * (book.bids.quantities.size + book.asks.quantities.size);
}

/** About the bytes a segment holds in memory, decoded. */
export function segmentBytes(segment: BookSegment): number {
  return LEVEL_BYTES * (segment.base.bids.length + segment.base.asks.length) + entriesBytes(segment.entries);
}

/**
 * What a market host keeps for its markets' history reads (docs/history.md#book-history), shared by
 * its 64 markets and bounded in bytes (least recently used first out): each read market's open
 * segment, decoded and brought up to date with the records committed since it was last read —
 * a read no longer parses the group's journal rows, only the few new ones — and the answers that
 * can change no more, by market, sequence and depth, so the same book asked again is served as
 * text; and the books where a replay's page ended, so its next page starts there. Memory only: a
 * restart reads again.
 *
 * @example
 * const held = cache.segments.get(symbol); // then only the records after held.logN are read
 * cache.answers.set(`${symbol}|${sequence}|${depth}`, text);
 */
export class HistoryCache {
  readonly segments = new BoundedMap<OpenSegment>(SEGMENTS_MAX_BYTES, 64, (_key, held) => held.bytes);
  /** By market and base sequence: a closed segment never changes, so it is decoded once while the host still reads it. */
  readonly closed = new BoundedMap<BookSegment>(CLOSED_MAX_BYTES, 16, (_key, segment) => segmentBytes(segment));
  readonly answers = new BoundedMap<string>(ANSWERS_MAX_BYTES, 4_096, textBytes);
  /** By market, segment and sequence: the book a page ended at, taken by the page that goes on from there. */
  readonly replayBooks = new BoundedMap<OrderBook>(REPLAY_BOOKS_MAX_BYTES, 256, (_key, book) => bookBytes(book));

  /** A market dropped after a failure: what is held of it is read again. */
  forget(symbol: string): void {
    this.segments.delete(symbol);
  }
}
