/**
 * One market's book history (docs/history.md#book-history), over its store: what the ingest
 * records of each batch's updates, the book at any kept sequence or moment, the replay's pages,
 * the segments' way to R2 and the hourly files. The market object writes alone and hands this
 * the state it holds.
 */
import { problem } from "../core/problem";
import type { BookEntry, BookSegment } from "../market/book-log";
import type { MarketState } from "../market/market-state";
import type { MarketRecord, MarketStore } from "../market/market-store";
import { BOOK_FILE_KINDS, HourRows, hourlyKey, hourOf } from "./book-files";
import { BookHistory, type SegmentRow } from "./book-history";
import {
  type BookTarget,
  bookOf,
  conflatedMessages,
  historicalBook,
  type ReplayBookMessage,
  replayTo,
  segmentHolds,
  sequenceAt,
  snapshotMessage,
} from "./book-replay";
import { entriesBytes, type HistoryCache, segmentBytes } from "./history-cache";
import { HOUR_MS, MINUTE_MS } from "./intervals";
import { ZipStreamWriter } from "./zip-stream";

/** An hour's files are written this long after it ends (the alarm; docs/history.md#book-files). */
export const BOOK_FILES_AFTER_MS = MINUTE_MS;

/** A page of a replay's book messages; `next` is the sequence the next page continues after, absent at the end. */
export interface ReplayPage {
  messages: ReplayBookMessage[];
  next?: number;
}

export class MarketBookHistory {
  readonly kept: BookHistory;
  private uploading: Promise<number> | undefined;

  constructor(
    private readonly store: MarketStore,
    sql: SqlStorage,
    private readonly bucket: R2Bucket,
    /** Makes sure the market's alarm fires no later than a time. */
    private readonly alarmBy: (time: number) => void,
    /** The host's, shared by its markets: open segments decoded and final answers, bounded in bytes. */
    private readonly cache: HistoryCache,
  ) {
    this.kept = new BookHistory(sql, bucket);
  }

  /** After a batch changed the book: its hour's files are due after the hour; a closed segment goes to R2 now. */
  applied(state: MarketState, now: number, segmentClosed: boolean): void {
    this.alarmBy(hourOf(now) + HOUR_MS + BOOK_FILES_AFTER_MS);
    if (segmentClosed) this.uploadBeside(state.market.symbol);
  }

  /** The kept segments go to R2 beside the ingest, never in its way; a fault is tried again by the alarm a minute on. */
  uploadBeside(symbol: string): void {
    void this.upload(symbol).catch((error) => {
      console.error(JSON.stringify({ level: "error", message: "book history upload failed", error: String(error) }));
      this.alarmBy(Date.now() + MINUTE_MS);
    });
  }

  /** The alarm: the closed hours' files that are due; an R2 fault leaves the hour due, and the alarm comes again. */
  async alarm(load: () => MarketState, now: number): Promise<void> {
    const from = this.store.bookHoursFrom();
    if (from === 0) return;
    if (from + HOUR_MS + BOOK_FILES_AFTER_MS <= now) {
      await this.writeHours(load(), now).catch((error) => {
        console.error(JSON.stringify({ level: "error", message: "book files failed", error: String(error) }));
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
    const { position, closed, snapshot } = this.store.book.append(
      this.store.bookPosition(),
      entries,
      () => ({
        sequence: state.book.sequence,
        time: entries[entries.length - 1]?.time ?? state.book.updatedAt,
        bids: state.book.bids.entries(),
        asks: state.book.asks.entries(),
        fingerprint: state.book.lastFingerprint,
      }),
      trades,
      now,
      force,
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
    const open = this.openSegment(state.market.symbol);
    if (open && segmentHolds(open, target)) return { segment: open };
    const row = this.kept.find(target);
    if (!row) return undefined;
    const segment = await this.kept.read(state.market.symbol, row);
    return segmentHolds(segment, target) ? { segment, row } : undefined;
  }

  /**
   * The log's open segment, decoded: held by the host's cache and brought up to date with the
   * records committed since (a read parses only those, not the whole segment's journal rows).
   */
  private openSegment(symbol: string): BookSegment | undefined {
    const position = this.store.bookPosition();
    const held = this.cache.segments.get(symbol);
    if (held && held.snapshotN === position.snapshotN && held.logN <= position.logN) {
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
    const book = bookOf(found.segment, state.market.priceScale, state.market.quantityScale);
    replayTo(book, found.segment, target);
    const text = JSON.stringify(historicalBook(symbol, book, depth));
    this.cache.answers.set(key, text);
    return { text, sequence, final: true };
  }

  /**
   * One page of a replay's book messages up to `to`: the first (no `after`) opens with the whole
   * book at `from`; each page is at most one segment (SNAPSHOT_EVERY batches, about 1 MB).
   */
  async replayPage(state: MarketState, from: number, to: number, after?: number): Promise<ReplayPage> {
    const target: BookTarget = after === undefined ? { time: from } : { sequence: after };
    const live = state.book;
    if (after !== undefined && after >= live.sequence) return { messages: [] };
    if (after === undefined && from >= live.updatedAt && live.sequence > 0) {
      // Nothing after `from` yet: the book as it is, and the end.
      return { messages: [snapshotMessage(live)] };
    }
    const found = await this.segmentFor(state, target);
    if (!found) this.notKept(state, after === undefined ? new Date(from).toISOString() : `sequence ${after}`);
    const book = bookOf(found.segment, state.market.priceScale, state.market.quantityScale);
    const rest = replayTo(book, found.segment, target);
    const messages = after === undefined ? [snapshotMessage(book)] : [];
    messages.push(...conflatedMessages(book, rest, to));
    const passedTo = rest.some((entry) => entry.time > to);
    return found.row && !passedTo ? { messages, next: found.row.lastSeq } : { messages };
  }

  /**
   * Writes the files of every closed hour since the record's `bookHoursFrom` that had book
   * updates (an hour without any has no file), each once: a file already in R2 is never written
   * again. Returns the hours written; the record moves past them.
   */
  async writeHours(state: MarketState, now: number): Promise<number[]> {
    const written: number[] = [];
    let hour = this.store.bookHoursFrom();
    if (!hour) return written;
    await this.upload(state.market.symbol);
    for (let n = 0; hour + HOUR_MS + BOOK_FILES_AFTER_MS <= now && n < 168; n++, hour += HOUR_MS) {
      if (await this.writeHour(state, hour)) written.push(hour);
    }
    // The next hour to write: this one, if the book changed since it began; else none until it changes.
    const next = state.book.updatedAt >= hour ? hour : 0;
    if (next !== this.store.bookHoursFrom()) this.store.writeRecord({ bookHoursFrom: next });
    return written;
  }

  /**
   * Writes one hour's two files, a segment at a time into zips streamed to R2 (memory holds one
   * segment and one 8 MiB part per file, however busy the hour). The book's `.CHECKSUM`, written
   * last, says the hour is written.
   */
  private async writeHour(state: MarketState, hour: number): Promise<boolean> {
    const { symbol } = state.market;
    const key = hourlyKey("book", symbol, hour);
    if (await this.bucket.head(`${key}.CHECKSUM`)) return false; // written before: an hour's files are written once
    const sources = this.segmentsOf(symbol, hour);
    if (sources.length === 0) return false;
    const first = await sources[0]!();
    const rows = new HourRows(bookOf(first, state.market.priceScale, state.market.quantityScale), hour);
    const files = BOOK_FILE_KINDS.map((kind) => {
      const fileKey = hourlyKey(kind, symbol, hour);
      const name = fileKey.slice(fileKey.lastIndexOf("/") + 1);
      return { kind, key: fileKey, name, zip: new ZipStreamWriter(this.bucket, fileKey, name.replace(/\.zip$/, ".csv"), new Date(hour)) };
    });
    for (let i = 0; i < sources.length; i++) {
      const text = rows.segment(i === 0 ? first : await sources[i]!());
      for (const file of files) await file.zip.write(text[file.kind]);
    }
    if (!rows.opened) return false;
    // The bookTicker file first: the book file's checksum, last, says the hour is written.
    for (const file of [...files].reverse()) {
      const { sha256 } = await file.zip.close();
      await this.bucket.put(`${file.key}.CHECKSUM`, `${sha256}  ${file.name}\n`, { httpMetadata: { contentType: "text/plain; charset=utf-8" } });
    }
    return true;
  }

  /** The segments with batches in the hour, in order, each read when asked for; the open one last if it has some. */
  private segmentsOf(symbol: string, hour: number): (() => Promise<BookSegment>)[] {
    const sources: (() => Promise<BookSegment>)[] = this.kept.between(hour, hour + HOUR_MS).map((row) => () => this.kept.read(symbol, row));
    const open = this.openSegment(symbol);
    const entries = open?.entries;
    if (open && entries && entries.length > 0 && entries[0]!.time < hour + HOUR_MS && entries[entries.length - 1]!.time >= hour) {
      sources.push(() => Promise.resolve(open));
    }
    // A segment's base is the book after the one before's last batch, so the first here opens the hour.
    return sources;
  }
}
