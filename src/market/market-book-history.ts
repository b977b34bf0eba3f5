/**
 * One market's book history (docs/history.md#book-history), over its store: what the ingest
 * records of each batch's updates, the book at any kept sequence or moment, the replay's pages,
 * the segments' way to R2 and the closed hours handed to the Workflow that builds their files.
 * The market object writes alone and hands this the state it holds.
 */

import { fnv1a } from "../core/fnv";
import { problem } from "../core/problem";
import { HOUR_MS, MINUTE_MS } from "../domain/intervals";
import type { OrderBook } from "../domain/order-book";
import { BOOK_FILES_AFTER_MS, CLOSE_SPREAD_MS, hourOf } from "../history/book-files";
import { type BookHourParams, bookHourId } from "../history/book-files-workflow";
import { BookHistory, decodeEntriesInSlices, type SegmentRow } from "../history/book-history";
import {
  type BookTarget,
  bookOf,
  copyOf,
  entriesAfter,
  entryAfter,
  historicalBook,
  type ReplayLimits,
  type ReplayPage,
  replayTo,
  segmentHolds,
  segmentPage,
  sequenceAt,
  snapshotMessage,
} from "../history/book-replay";
import { entriesBytes, type HistoryCache, segmentBytes } from "../history/history-cache";
import { logFailure } from "../logs/log";
import { type BookEntry, type BookSegment, decodeBase, decodeEntry, lastSequenceOf } from "../writes/book-entries";
import type { MarketRecord, MarketStore } from "../writes/market-store";
import type { MarketState } from "./market-state";

/**
 * A market closes the segment holding an hour's end this long after the hour (its own share of
 * CLOSE_SPREAD_MS, by a hash of its symbol): a group's 64 markets close theirs over five minutes,
 * not all in the hour's first commit (docs/history.md#staggered-closes).
 */
export const closeDelay = (symbol: string): number => fnv1a(symbol) % CLOSE_SPREAD_MS;

/** Entries a history read replays past its checkpoint before the checkpoint moves up (`bookAtSequence`). */
const CHECKPOINT_ENTRIES = 64;

export class MarketBookHistory {
  readonly kept: BookHistory;
  private uploading: Promise<number> | undefined;
  /** The open segment's decode under way (`decodeOpen`): one a market, whatever the readers. */
  private decoding: Promise<void> | undefined;
  /** The kept segments' reads under way (`keptSegment`): one a segment, whatever the readers. */
  private readonly keptReads = new Map<string, Promise<BookSegment>>();

  constructor(
    private readonly store: MarketStore,
    sql: SqlStorage,
    bucket: R2Bucket,
    /** Where closed segments' index rows are published for the edge (env.DB). */
    db: D1Database,
    /** Makes sure the market's alarm fires no later than a time. */
    private readonly alarmBy: (time: number) => void,
    /** The host's, shared by its markets: open segments decoded and final answers, bounded in bytes. */
    private readonly cache: HistoryCache,
    /** The Workflow that builds an hour's files (env.BOOK_FILES). */
    private readonly files: Workflow<BookHourParams>,
    /** Counts each read by the segment it fell in (the host's metrics). */
    private readonly counted: (segment: "open" | "closed") => void,
  ) {
    this.kept = new BookHistory(sql, bucket, db);
  }

  /** After a batch changed the book: its hour's files are due after the hour; a closed segment goes to R2 now. */
  applied(state: MarketState, now: number, segmentClosed: boolean): void {
    this.alarmBy(hourOf(now) + HOUR_MS + BOOK_FILES_AFTER_MS);
    if (segmentClosed) this.uploadBeside(state.market.symbol);
  }

  /** The kept segments go to R2 beside the ingest, never in its way; a fault is tried again by the alarm a minute on. */
  uploadBeside(symbol: string): void {
    void this.upload(symbol).catch((error) => {
      logFailure("book history upload failed", { error });
      this.alarmBy(Date.now() + MINUTE_MS);
    });
  }

  /**
   * The alarm: the closed hours that are due are handed on (`closeHours`); an R2 or Workflow fault
   * leaves the hour due, and the alarm comes again a minute on.
   */
  async alarm(load: () => MarketState, now: number): Promise<void> {
    const from = this.store.bookHoursFrom();
    if (from === 0) return;
    if (from + HOUR_MS + BOOK_FILES_AFTER_MS <= now) {
      await this.closeHours(load(), now).catch((error) => {
        logFailure("book hours not handed on", { error });
        this.alarmBy(now + MINUTE_MS);
      });
    }
    const next = this.store.bookHoursFrom();
    if (next > 0) this.alarmBy(next + HOUR_MS + BOOK_FILES_AFTER_MS);
  }

  /**
   * Logs a commit (inside its transaction): its batches' applied updates and their trades (packed),
   * one ring row — or a snapshot, when one is due, which closes a segment kept until R2 has it.
   * Returns the record's fields, whether a segment now waits, and whether a snapshot took the
   * row's place (the commit's trades are then the caller's to write).
   */
  record(
    state: MarketState,
    entries: readonly BookEntry[],
    trades: readonly unknown[],
    now: number,
    /** A snapshot now, whatever the log's counts (`BookLog.append`). */
    force = false,
  ): { fields: Partial<MarketRecord>; closed: boolean; snapshot: boolean } {
    const at = this.store.bookPosition();
    // The first commit past the market's close delay after the hour closes the segment: an hour's files read closed segments only.
    const opened = entries.length > 0 ? this.store.book.openedAt(at) : undefined;
    const hourClosed = opened !== undefined && entries[0]!.time >= hourOf(opened) + HOUR_MS + closeDelay(state.market.symbol);
    const { position, closed, snapshot } = this.store.book.append(
      at,
      entries,
      () => ({
        sequence: state.book.sequence,
        time: entries[entries.length - 1]?.time ?? state.book.updatedAt,
        bids: state.book.bids.entries(),
        asks: state.book.asks.entries(),
        fingerprint: state.book.lastFingerprint,
        recent: state.book.recentFingerprints(),
      }),
      trades,
      now,
      force || hourClosed,
    );
    if (closed) this.kept.keep(closed);
    const fields: Partial<MarketRecord> = { bookSnapshotN: position.snapshotN, bookLogN: position.logN };
    if (!this.store.bookHoursFrom() && entries.length > 0) fields.bookHoursFrom = hourOf(entries[0]!.time);
    return { fields, closed: closed !== undefined, snapshot };
  }

  /** Puts the kept segments into R2, one upload at a time (the ingest's writes never wait for it). */
  upload(symbol: string): Promise<number> {
    this.uploading ??= this.kept.upload(symbol).finally(() => {
      this.uploading = undefined;
    });
    return this.uploading;
  }

  /** The segment holding the target: the log's open one, or a kept one; undefined before the history begins. */
  private async segmentFor(state: MarketState, target: BookTarget): Promise<{ segment: BookSegment; row?: SegmentRow } | undefined> {
    const open = await this.openSegment(state.market.symbol);
    if (open && segmentHolds(open, target)) {
      this.counted("open");
      return { segment: open };
    }
    const row = this.kept.find(target);
    if (!row) return undefined;
    this.counted("closed");
    const segment = await this.keptSegment(state.market.symbol, row);
    return segmentHolds(segment, target) ? { segment, row } : undefined;
  }

  /**
   * A kept segment, decoded once while the host reads it (the seconds before R2 and the index have
   * it, or when they fail): readers that come meanwhile wait for the same read. Each read decoded
   * it whole before, and the reads of a busy market's last moments right after its segment closed
   * held the host's thread ~75 ms each.
   */
  private keptSegment(symbol: string, row: SegmentRow): Promise<BookSegment> {
    const key = `${symbol}|${row.baseSeq}`;
    const held = this.cache.closed.get(key);
    if (held) return Promise.resolve(held);
    let reading = this.keptReads.get(key);
    if (!reading) {
      reading = this.kept
        .read(symbol, row)
        .then((segment) => {
          this.cache.closed.set(key, segment);
          return segment;
        })
        .finally(() => this.keptReads.delete(key));
      this.keptReads.set(key, reading);
    }
    return reading;
  }

  /**
   * The log's open segment, decoded: held by the host's cache and brought up to date with the
   * records committed since (a read parses only those, not the whole segment's journal rows).
   * The first read after a snapshot decodes it from the text the log holds, a slice at a time
   * (`decodeOpen`: a busy market's 1 MB segment in one turn held every market of the group about
   * 0.25 s); readers that come meanwhile wait for the same decode.
   */
  private async openSegment(symbol: string): Promise<BookSegment | undefined> {
    const held = this.heldOpen(symbol);
    if (held) return held;
    this.decoding ??= this.decodeOpen(symbol).finally(() => {
      this.decoding = undefined;
    });
    await this.decoding;
    return this.heldOpen(symbol) ?? this.readOpen(symbol);
  }

  /** The cache's open segment, topped up with the records since, when it is still the log's open one. */
  private heldOpen(symbol: string): BookSegment | undefined {
    const position = this.store.bookPosition();
    const held = this.cache.segments.get(symbol);
    if (!held || held.snapshotN !== position.snapshotN || held.logN > position.logN) return undefined;
    if (held.logN < position.logN) {
      const mark = this.store.book.mark();
      const more = this.store.book.entries(position, held.logN, held.mark);
      if (!more) return undefined;
      held.segment.entries.push(...more);
      held.logN = position.logN;
      held.mark = mark;
      held.bytes += entriesBytes(more);
      this.cache.segments.set(symbol, held); // its bytes counted again
    }
    return held.segment;
  }

  /**
   * The open segment decoded from the text the log holds (no row read), a slice of entries a
   * turn, and cached as of the records it holds; nothing when the text is not held (evicted by
   * the host's bound) or a snapshot closed the segment meanwhile (the read then takes `readOpen`).
   */
  private async decodeOpen(symbol: string): Promise<void> {
    const position = this.store.bookPosition();
    const mark = this.store.book.mark();
    const text = this.store.book.openText(position);
    if (!text) return;
    const segment: BookSegment = {
      base: decodeBase(JSON.parse(text.base)),
      entries: await decodeEntriesInSlices(text.entries, (line) => decodeEntry(JSON.parse(line))),
    };
    if (this.store.bookPosition().snapshotN !== position.snapshotN) return;
    this.cache.segments.set(symbol, { snapshotN: position.snapshotN, logN: position.logN, mark, segment, bytes: segmentBytes(segment) });
  }

  /** The open segment read back from the log's records in one turn, and cached (its text not held). */
  private readOpen(symbol: string): BookSegment | undefined {
    const position = this.store.bookPosition();
    const mark = this.store.book.mark();
    const base = this.store.book.base(position);
    const entries = base && this.store.book.entries(position);
    if (!base || !entries) return undefined;
    const segment: BookSegment = { base, entries };
    this.cache.segments.set(symbol, { snapshotN: position.snapshotN, logN: position.logN, mark, segment, bytes: segmentBytes(segment) });
    return segment;
  }

  /** 404 naming what is kept. */
  private notKept(state: MarketState, asked: string): never {
    const first = this.kept.first();
    const position = this.store.bookPosition();
    const open = this.store.book.base(position);
    const begins = first ? { sequence: first.baseSeq, time: first.firstTime } : open ? { sequence: open.sequence, time: open.time } : undefined;
    const { symbol } = state.market;
    throw problem(
      "NOT_FOUND",
      begins
        ? `${asked} is before the book history of ${symbol}, which begins at sequence ${begins.sequence} (${new Date(begins.time).toISOString()})`
        : `${symbol} keeps no book history yet`,
      begins ? { firstSequence: begins.sequence, firstTime: begins.time } : {},
    );
  }

  /**
   * The book as it stood at the target, in the live answer's shape, as JSON text; `final` when it
   * can change no more (a sequence, or a moment before the last update).
   */
  async bookAt(state: MarketState, target: BookTarget, depth: number): Promise<{ text: string; sequence: number; final: boolean }> {
    const live = state.book;
    const { symbol } = state.market;
    if ("sequence" in target && target.sequence > live.sequence) {
      throw problem("NOT_FOUND", `sequence ${target.sequence} has not happened: the book of ${symbol} is at ${live.sequence}`, { sequence: live.sequence });
    }
    if ("sequence" in target ? target.sequence === live.sequence : target.time >= live.updatedAt) {
      const text = JSON.stringify(historicalBook(symbol, live, depth));
      // Final only once committed: a batch staged for the tick may yet fail, and its sequence be another's.
      return { text, sequence: live.sequence, final: "sequence" in target && live.sequence <= this.store.committedBookSequence() };
    }
    const found = await this.segmentFor(state, target);
    if (!found) this.notKept(state, "sequence" in target ? `sequence ${target.sequence}` : new Date(target.time).toISOString());
    // A moment is the sequence it resolves to: the same book, asked again either way, is one answer.
    const sequence = sequenceAt(found.segment, target);
    const key = `${symbol}|${sequence}|${depth}`;
    const cached = this.cache.answers.get(key);
    if (cached !== undefined) return { text: cached, sequence, final: true };
    const book = this.bookAtSequence(state, found.segment, sequence);
    const text = JSON.stringify(historicalBook(symbol, book, depth));
    this.cache.answers.set(key, text);
    return { text, sequence, final: true };
  }

  /**
   * The segment's book at `sequence`: replayed from the market's checkpoint in the segment when one
   * stands at or before it, else from the segment's base. Past 2 × CHECKPOINT_ENTRIES entries the
   * checkpoint moves up to CHECKPOINT_ENTRIES before the book asked, so reads of the last moments —
   * most of what is asked — copy one book and replay a few entries, not the whole segment's
   * (a busy market's: ~2,200 entries of 20 level changes a read). Held with the replays' books,
   * bounded by the host's history cache.
   */
  private bookAtSequence(state: MarketState, segment: BookSegment, sequence: number): OrderBook {
    const { symbol, priceScale, quantityScale } = state.market;
    const key = `${symbol}|${segment.base.sequence}|checkpoint`;
    const checkpoint = this.cache.replayBooks.get(key);
    const from = checkpoint && checkpoint.sequence <= sequence ? checkpoint : undefined;
    const book = from ? copyOf(from) : bookOf(segment, priceScale, quantityScale);
    let entries = from ? entriesAfter(segment, from.sequence) : segment.entries;
    // The entries wholly at or before `sequence` (the one it ends inside, if any, is replayed after).
    const needed = entryAfter(entries, sequence);
    if (needed > 2 * CHECKPOINT_ENTRIES) {
      const at = lastSequenceOf(entries[needed - CHECKPOINT_ENTRIES - 1]!);
      replayTo(book, { base: segment.base, entries }, { sequence: at });
      this.cache.replayBooks.set(key, copyOf(book));
      entries = entriesAfter(segment, at);
    }
    replayTo(book, { base: segment.base, entries }, { sequence });
    return book;
  }

  /**
   * One page of a replay's book messages up to `to`: the first (no `after`) opens with the whole
   * book at `from`; each page is at most one segment (SNAPSHOT_EVERY batches, about 1 MB).
   */
  async replayPage(state: MarketState, from: number, to: number, after?: number, limits: ReplayLimits = {}): Promise<ReplayPage> {
    const live = state.book;
    // Pages hold what is committed: batches staged for the tick are the live stream's until their
    // commit is durable (a catch-up takes them from its shard's recent messages, docs/design.md#the-write-path).
    const committed = this.store.committedBookSequence();
    if (after !== undefined && after >= committed) return { messages: [] };
    if (after === undefined && from >= live.updatedAt && live.sequence > 0 && live.sequence === committed) {
      // Nothing after `from` yet: the book as it is, and the end.
      return { messages: [snapshotMessage(live)] };
    }
    const found = await this.segmentFor(state, after === undefined ? { time: from } : { sequence: after });
    if (!found) this.notKept(state, after === undefined ? new Date(from).toISOString() : `sequence ${after}`);
    const toSequence = Math.min(limits.toSequence ?? Number.MAX_SAFE_INTEGER, committed);
    const page = segmentPage(
      found.segment,
      state.market,
      from,
      after,
      { to, toSequence, maxBytes: limits.maxBytes },
      this.cache.replayBooks,
      state.market.symbol,
    );
    if (page.end === "bytes") return { messages: page.messages, next: page.sequence };
    // A kept segment read to its end within bounds: the next page is the next segment's.
    return found.row && page.end === "segment" ? { messages: page.messages, next: found.row.lastSeq } : { messages: page.messages };
  }

  /**
   * Hands every closed hour since the record's `bookHoursFrom` to the Workflow that builds its
   * files (`book-files-workflow.ts`), off this thread: once the segments holding it are in R2, one
   * instance an hour (an hour without a segment has no files). The host only records that the hour
   * closed; it never waits for the files, so a failing hour holds back no other. Stops at an hour
   * the open segment still holds part of (its commit or the alarm closes it: `closeHour`). Returns
   * the hours handed on; the record moves past them.
   */
  async closeHours(state: MarketState, now: number): Promise<number[]> {
    const handed: number[] = [];
    let hour = this.store.bookHoursFrom();
    if (!hour) return handed;
    await this.upload(state.market.symbol);
    const open = this.store.book.openedAt(this.store.bookPosition());
    for (let n = 0; hour + HOUR_MS + BOOK_FILES_AFTER_MS <= now && n < 168; n++, hour += HOUR_MS) {
      if (open !== undefined && open < hour + HOUR_MS) break;
      const segments = this.kept.between(hour, hour + HOUR_MS).map((row) => row.baseSeq);
      if (segments.length === 0) continue;
      const { symbol, priceScale, quantityScale } = state.market;
      await this.startFiles({ symbol, hour, priceScale, quantityScale, segments });
      handed.push(hour);
    }
    // The next hour to hand on: this one, if the book changed since it began; else none until it changes.
    const next = state.book.updatedAt >= hour ? hour : 0;
    if (next !== this.store.bookHoursFrom()) this.store.writeRecord({ bookHoursFrom: next });
    return handed;
  }

  /** Whether the open segment holds batches of an hour that ended more than the market's close delay ago: a snapshot must close it before the hour's files. */
  holdsClosedHour(symbol: string, now: number): boolean {
    const open = this.store.book.openedAt(this.store.bookPosition());
    return open !== undefined && now >= hourOf(open) + HOUR_MS + closeDelay(symbol);
  }

  /** The hour's instance, once: an instance of its id made before (a retried alarm) is the same hour's. */
  private async startFiles(params: BookHourParams): Promise<void> {
    const id = bookHourId(params.symbol, params.hour);
    try {
      await this.files.create({ id, params });
    } catch (error) {
      const existing = await this.files.get(id).catch(() => undefined);
      if (!existing) throw error;
    }
  }
}
