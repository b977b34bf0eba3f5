/**
 * The book's history read back (docs/history.md#book-history): a segment's base, then its
 * batches in order, into an order book — to a sequence, to a moment, or as the messages a live
 * subscriber got. Pure: the market object and the replay connection do the I/O.
 */
import type { BoundedMap } from "../core/bounded-map";
import { formatUnits } from "../core/decimal";
import { OrderBook, type WireLevel } from "../domain/order-book";
import { CONFLATE_MS } from "../streams/conflation";
import type { BookEntry, BookSegment } from "../writes/book-entries";
import { lastSequenceOf } from "../writes/book-entries";

/** A moment of the book: the last update at or before a sequence, or the last batch applied at or before a time. */
export type BookTarget = { sequence: number } | { time: number };

/** Whether an entry's updates (or which of them) fall at or before the target. */
function reaches(target: BookTarget, entry: BookEntry, sequence: number): boolean {
  return "sequence" in target ? sequence <= target.sequence : entry.time <= target.time;
}

/** A book at the segment's base, at the market's scales. */
export function bookOf(segment: BookSegment, priceScale: number, quantityScale: number): OrderBook {
  const book = new OrderBook(priceScale, quantityScale);
  book.restore(segment.base.sequence, segment.base.time, segment.base.bids, segment.base.asks);
  return book;
}

/** Another book with the same levels, sequence and time (a checkpoint is replayed on from a copy). */
export function copyOf(book: OrderBook): OrderBook {
  const copy = new OrderBook(book.priceScale, book.quantityScale);
  copy.restore(book.sequence, book.updatedAt, book.bids.entries(), book.asks.entries());
  return copy;
}

/** Replays the segment's batches into `book` (at its base) while they reach the target; returns the entries left. */
export function replayTo(book: OrderBook, segment: BookSegment, target: BookTarget): BookEntry[] {
  for (let i = 0; i < segment.entries.length; i++) {
    const entry = segment.entries[i]!;
    for (let u = 0; u < entry.updates.length; u++) {
      const update = entry.updates[u]!;
      if (!reaches(target, entry, update.sequence)) return [{ time: entry.time, updates: entry.updates.slice(u) }, ...segment.entries.slice(i + 1)];
      book.replay(update, entry.time);
    }
  }
  return [];
}

/** The sequence the book stands at for the target, within the segment (no level is touched). */
export function sequenceAt(segment: BookSegment, target: BookTarget): number {
  let sequence = segment.base.sequence;
  for (const entry of segment.entries) {
    for (const update of entry.updates) {
      if (!reaches(target, entry, update.sequence)) return sequence;
      sequence = update.sequence;
    }
  }
  return sequence;
}

/** Whether the segment holds the target: from its base to its last batch. */
export function segmentHolds(segment: BookSegment, target: BookTarget): boolean {
  return "sequence" in target ? target.sequence >= segment.base.sequence : target.time >= segment.base.time;
}

/** The book as `GET /api/orderbook?sequence=|at=` answers it: the live answer's shape, at the moment it stood. */
export function historicalBook(symbol: string, book: OrderBook, depth: number) {
  const { bids, asks } = book.levels(depth);
  return { symbol, sequence: book.sequence, time: book.updatedAt, timestamp: book.updatedAt, checksum: book.checksum(), bids, asks };
}

/** A `book.{SYMBOL}` message as the replay sends it: what a live subscriber got, with the moment it shows. */
export interface ReplayBookMessage {
  type: "snapshot" | "delta";
  firstSequence?: number;
  sequence: number;
  time: number;
  checksum: number;
  bids: WireLevel[];
  asks: WireLevel[];
}

/** A page of a replay's book messages; `next` is the sequence the next page continues after, absent at the end. */
export interface ReplayPage {
  messages: ReplayBookMessage[];
  next?: number;
}

/** A catch-up's bounds on a replay page (docs/streams.md#from-any-moment): no update past `toSequence`, about `maxBytes` of messages. */
export interface ReplayLimits {
  toSequence?: number;
  maxBytes?: number;
}

/** When a replay page's message goes, merged by time with trades: the opening snapshot (the book at `from`) first, whatever its own time. */
export function replayTime(message: ReplayBookMessage, index: number, from: number, opening: boolean): number {
  return opening && index === 0 ? from : message.time;
}

/** The whole book as the first message of a replay. */
export function snapshotMessage(book: OrderBook): ReplayBookMessage {
  return { type: "snapshot", sequence: book.sequence, time: book.updatedAt, checksum: book.checksum(), ...book.levels(Number.MAX_SAFE_INTEGER) };
}

/**
 * The batches as a live subscriber got them (docs/streams.md#conflation): one message per
 * CONFLATE_MS window of the market's clock, the window's touched levels at their final quantity
 * (`"0"`: removed) from `firstSequence` to `sequence`, or the whole book when a snapshot came in
 * it; batches after `toTime`, and updates after `toSequence`, are left out, and no message starts
 * once `maxBytes` of JSON text are made (so `book` ends at the last message's sequence). `book` is
 * at the state before the first entry.
 */
export function conflatedMessages(
  book: OrderBook,
  all: readonly BookEntry[],
  toTime: number,
  toSequence = Number.MAX_SAFE_INTEGER,
  maxBytes = Number.POSITIVE_INFINITY,
): ReplayBookMessage[] {
  const entries = upToSequence(all, toSequence);
  const messages: ReplayBookMessage[] = [];
  let bytes = 0;
  let i = 0;
  while (i < entries.length && entries[i]!.time <= toTime && bytes <= maxBytes) {
    const window = Math.floor(entries[i]!.time / CONFLATE_MS);
    const firstSequence = book.sequence + 1;
    const touched = { bids: new Set<bigint>(), asks: new Set<bigint>() };
    let snapshot = false;
    for (; i < entries.length && entries[i]!.time <= toTime && Math.floor(entries[i]!.time / CONFLATE_MS) === window; i++) {
      const entry = entries[i]!;
      for (const update of entry.updates) {
        snapshot ||= update.type === "snapshot";
        for (const [price] of update.bids) touched.bids.add(price);
        for (const [price] of update.asks) touched.asks.add(price);
        book.replay(update, entry.time);
      }
    }
    if (snapshot) {
      messages.push({ ...snapshotMessage(book), firstSequence });
      if (maxBytes !== Number.POSITIVE_INFINITY) bytes += JSON.stringify(messages.at(-1)).length;
      continue;
    }
    const level = (side: "bids" | "asks", price: bigint): WireLevel => {
      const quantity = book[side].quantities.get(price);
      return [formatUnits(price, book.priceScale), quantity === undefined ? "0" : formatUnits(quantity, book.quantityScale)];
    };
    const sorted = (side: "bids" | "asks") =>
      [...touched[side]].sort((a, b) => (side === "bids" ? (a > b ? -1 : 1) : a < b ? -1 : 1)).map((p) => level(side, p));
    messages.push({
      type: "delta",
      firstSequence,
      sequence: book.sequence,
      time: book.updatedAt,
      checksum: book.checksum(),
      bids: sorted("bids"),
      asks: sorted("asks"),
    });
    if (maxBytes !== Number.POSITIVE_INFINITY) bytes += JSON.stringify(messages.at(-1)).length;
  }
  return messages;
}

/** The index of the first entry with an update after `sequence` (entries rise by sequence: found by halving). */
export function entryAfter(entries: readonly BookEntry[], sequence: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (entries[mid]!.updates.at(-1)!.sequence <= sequence) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The segment's updates after `sequence`, none applied (a book already at `sequence` goes on from them). */
export function entriesAfter(segment: BookSegment, sequence: number): BookEntry[] {
  const { entries } = segment;
  const at = entryAfter(entries, sequence);
  if (at === entries.length) return [];
  const first = entries[at]!;
  const updates = first.updates.filter((update) => update.sequence > sequence);
  return [updates.length === first.updates.length ? first : { time: first.time, updates }, ...entries.slice(at + 1)];
}

/** The segment's first update after `sequence`, with its batch's time, without copying the rest. */
function updateAfter(segment: BookSegment, sequence: number): { time: number; sequence: number } | undefined {
  const entry = segment.entries[entryAfter(segment.entries, sequence)];
  const update = entry?.updates.find((u) => u.sequence > sequence);
  return entry && update ? { time: entry.time, sequence: update.sequence } : undefined;
}

/** The entries' updates up to `toSequence` (a catch-up stops where the shard's copy of the book stands). */
function upToSequence(entries: readonly BookEntry[], toSequence: number): readonly BookEntry[] {
  const last = entries.at(-1)?.updates.at(-1);
  if (!last || last.sequence <= toSequence) return entries;
  const kept: BookEntry[] = [];
  for (const entry of entries) {
    const updates = entry.updates.filter((update) => update.sequence <= toSequence);
    if (updates.length > 0) kept.push(updates.length === entry.updates.length ? entry : { time: entry.time, updates });
    if (updates.length < entry.updates.length) break;
  }
  return kept;
}

/**
 * The segment's book at a cursor — after sequence `after`, or at moment `from` when none — as a
 * whole-book message, and the messages after it through `to` (a day's datasets read a segment
 * whole, cursor to cursor).
 */
export function segmentMessages(
  segment: BookSegment,
  scales: { priceScale: number; quantityScale: number },
  from: number,
  after: number | undefined,
  to: number,
): { opening: ReplayBookMessage; messages: ReplayBookMessage[] } {
  const book = bookOf(segment, scales.priceScale, scales.quantityScale);
  const rest = replayTo(book, segment, after === undefined ? { time: from } : { sequence: after });
  return { opening: snapshotMessage(book), messages: conflatedMessages(book, rest, to) };
}

/** Where a page stopped: at its bytes (the next goes on from its book, held), at the segment's end within its bounds, or past them (the replay's end). */
type PageEnd = "bytes" | "segment" | "passed";

/**
 * One page of a segment's book messages (the host's open and kept segments, the edge's closed
 * blocks): the first (no `after`) opens with the whole book at `from`; a later one goes on after
 * the cursor — from the book an earlier page ended at when `held` has it (a catch-up's pages cost
 * what they send, not a replay from the segment's base each), and a page stopped by its bytes
 * leaves its book there for the next.
 */
export function segmentPage(
  segment: BookSegment,
  scales: { priceScale: number; quantityScale: number },
  from: number,
  after: number | undefined,
  limits: { to: number; toSequence: number; maxBytes?: number },
  held: BoundedMap<OrderBook>,
  /** The market's symbol: held books are keyed by it, the segment's base and the sequence. */
  symbol: string,
): { messages: ReplayBookMessage[]; sequence: number; end: PageEnd } {
  const key = (sequence: number) => `${symbol}|${segment.base.sequence}|${sequence}`;
  const kept = after === undefined ? undefined : held.get(key(after));
  if (kept) held.delete(key(kept.sequence));
  const book = kept ?? bookOf(segment, scales.priceScale, scales.quantityScale);
  const rest = kept ? entriesAfter(segment, kept.sequence) : replayTo(book, segment, after === undefined ? { time: from } : { sequence: after });
  const messages = after === undefined ? [snapshotMessage(book)] : [];
  const { to, toSequence, maxBytes } = limits;
  messages.push(...conflatedMessages(book, rest, to, toSequence, maxBytes));
  const left = updateAfter(segment, book.sequence);
  if (maxBytes !== undefined && left && left.time <= to && left.sequence <= toSequence) {
    held.set(key(book.sequence), book);
    return { messages, sequence: book.sequence, end: "bytes" };
  }
  const passed = rest.some((entry) => entry.time > to || lastSequenceOf(entry) > toSequence);
  return { messages, sequence: book.sequence, end: passed ? "passed" : "segment" };
}
