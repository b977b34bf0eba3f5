import type { MarketConfig } from "../domain/market-config";
import type { ArchivedChunk } from "../domain/trades";
import { pageRunsForwards, type StoredTrade, type TradePage } from "../domain/trades";
import { BookLog } from "./book-log";
import { BucketStore } from "./bucket-store";
import { type MarketStorage, scopeOf } from "./market-storage";
import { type PackedTrade, TradeBlocks, unpack } from "./trade-blocks";
import { TradeIdMinutes } from "./trade-id-minutes";

/** What changes with every batch, kept as one record (one row written a batch, not one per field). */
export interface MarketRecord {
  bookSequence: number;
  bookUpdatedAt: number;
  /** Fingerprint of the last applied book update: a replay is recognised after an eviction too. */
  bookFingerprint: string;
  /** Where the book's log stands (`book-log.ts`). */
  bookSnapshotN: number;
  bookLogN: number;
  tradeSeq: number;
  /** The candle buckets stored hold the trades up to this one; later ones are staged again on load (`bucket-store.ts`). */
  bucketsThroughSeq: number;
  /** The last flush's time: hours and days that ended by then are stored whole, later ones are built again on load (`bucket-store.ts`); absent, every flush wrote them. */
  rollupsThrough?: number;
  /** The minute being traded at the last flush, held back: the trades from its start on are staged again on load, even up to `bucketsThroughSeq`. */
  heldFrom?: number;
  /** When the market last applied an ingest batch that changed it (its feed's last word). */
  lastUpdateAt: number;
  /** Trade ids up to this one are in the archive (docs/history.md#trades); 0: none. */
  archivedThrough: number;
  /** Past UTC days that took a late trade since their files were last written (docs/history.md#daily-files), as JSON. */
  dirtyDays: string;
  /** The first UTC hour whose book files are not written yet, from the first book update after the last written (0: none due). */
  bookHoursFrom?: number;
}

export interface MarketMeta extends MarketRecord {
  /** The newest config the market was given (from the registry). */
  config: MarketConfig | undefined;
  /** StreamHub shards subscribed to this market. */
  shards: string[];
}

const RECORD_KEY = "record";

/** A market's record before its first batch. */
const FRESH_RECORD: MarketRecord = {
  bookSequence: 0,
  bookUpdatedAt: 0,
  bookFingerprint: "",
  bookSnapshotN: 0,
  bookLogN: 0,
  tradeSeq: 0,
  bucketsThroughSeq: 0,
  lastUpdateAt: 0,
  archivedThrough: 0,
  dirtyDays: "[]",
};

/** The record's fields a batch changes that the book log and the trade blocks keep too (`bringUp`): no row of their own a batch. */
export const DERIVED_FIELDS: readonly (keyof MarketRecord)[] = [
  "bookSequence",
  "bookUpdatedAt",
  "bookFingerprint",
  "bookSnapshotN",
  "bookLogN",
  "tradeSeq",
  "lastUpdateAt",
];

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS minute_buckets (
  minute INTEGER PRIMARY KEY, open TEXT NOT NULL, high TEXT NOT NULL, low TEXT NOT NULL,
  close TEXT NOT NULL, first_trade_time INTEGER NOT NULL, last_trade_time INTEGER NOT NULL,
  volume TEXT NOT NULL, quote_volume TEXT NOT NULL, trade_count INTEGER NOT NULL,
  taker_buy_volume TEXT NOT NULL DEFAULT '0', taker_buy_quote_volume TEXT NOT NULL DEFAULT '0',
  imported INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS rollup_buckets (
  size INTEGER NOT NULL, start INTEGER NOT NULL, open TEXT NOT NULL, high TEXT NOT NULL, low TEXT NOT NULL,
  close TEXT NOT NULL, first_trade_time INTEGER NOT NULL, last_trade_time INTEGER NOT NULL,
  volume TEXT NOT NULL, quote_volume TEXT NOT NULL, trade_count INTEGER NOT NULL,
  taker_buy_volume TEXT NOT NULL, taker_buy_quote_volume TEXT NOT NULL, PRIMARY KEY (size, start));
CREATE TABLE IF NOT EXISTS archive_chunks (
  chunk INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  min_time INTEGER NOT NULL, max_time INTEGER NOT NULL, trades INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS archive_chunks_by_time ON archive_chunks (max_time);
`;

/** A `WHERE` of the bounds that are set (an unset one filters nothing), and their values in order. */
function whereOf(bounds: [condition: string, value: number | undefined][]): { filter: string; args: number[] } {
  const used = bounds.filter((bound): bound is [string, number] => bound[1] !== undefined);
  return { filter: used.length > 0 ? `WHERE ${used.map(([condition]) => condition).join(" AND ")}` : "", args: used.map(([, value]) => value) };
}

/**
 * All SQLite access of one MarketObject. Big integers are stored as decimal text because
 * SQLite integers come back as JS numbers, which would round volumes above 2^53.
 */
export class MarketStore {
  /** The ids of trades taken in the last 25 hours and of hot ones, by minute of trade time: a resend of one is a duplicate. */
  private readonly tradeIds: TradeIdMinutes;
  /** The candle buckets: seconds, minutes, hours and days. */
  readonly candles: BucketStore;
  /** The book, as a snapshot and a log of batches' changes. */
  readonly book: BookLog;
  /** The hot trades, a block a batch. */
  readonly blocks: TradeBlocks;
  /** The market's record as last read or written (loaded on first use). */
  private record: MarketRecord | undefined;

  constructor(private readonly storage: MarketStorage) {
    storage.sql.exec(SCHEMA);
    this.tradeIds = new TradeIdMinutes(storage.sql);
    this.candles = new BucketStore(storage.sql);
    this.book = new BookLog(storage.sql, storage.ring, storage.openSegments && { segments: storage.openSegments, key: scopeOf(storage.sql) });
    this.blocks = new TradeBlocks(storage.sql);
  }

  private get sql(): SqlStorage {
    return this.storage.sql;
  }

  /**
   * Whether the market was given its config (one key read): an evicted object's alarm asks before
   * it loads, where `readMeta` would read the log back twice.
   */
  hasConfig(): boolean {
    return this.sql.exec("SELECT 1 FROM meta WHERE key = 'config'").toArray().length > 0;
  }

  readMeta(): MarketMeta {
    const values = new Map<string, string>();
    for (const row of this.sql.exec<{ key: string; value: string }>("SELECT key, value FROM meta")) values.set(row.key, row.value);
    const held = values.get(RECORD_KEY);
    const record: MarketRecord = held === undefined ? { ...FRESH_RECORD } : (JSON.parse(held) as MarketRecord);
    this.bringUp(record);
    this.record = record;
    return {
      ...record,
      config: values.has("config") ? (JSON.parse(values.get("config")!) as MarketConfig) : undefined,
      shards: JSON.parse(values.get("shards") ?? "[]") as string[],
    };
  }

  /** The config and the shards: rows of their own, written when they change (rarely). */
  writeMeta(key: "config" | "shards", value: string): void {
    this.putMeta(key, value);
  }

  private putMeta(key: string, value: string): void {
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  /** The market's record as stored. */
  private current(): MarketRecord {
    if (!this.record) this.readMeta();
    return this.record!;
  }

  /**
   * The record's fields that every batch changes, read back from what the batch wrote anyway (the
   * book log's newest entry or snapshot, the newest trade block): the record is not written for
   * them, and is brought up to them here when the market loads.
   */
  private bringUp(record: MarketRecord): void {
    const log = this.book.latest();
    if (log && log.n > record.bookLogN) {
      record.bookLogN = log.n;
      record.bookSnapshotN = log.snapshotN ?? record.bookSnapshotN;
      if (log.book) {
        record.bookSequence = log.book.sequence;
        record.bookUpdatedAt = log.book.time;
        record.bookFingerprint = log.book.fingerprint;
        record.lastUpdateAt = Math.max(record.lastUpdateAt, log.book.time);
      }
    }
    // The trades of the commits since the newest block are its open block again (they are in the log's rows).
    const position = { snapshotN: record.bookSnapshotN, logN: record.bookLogN };
    this.blocks.restoreOpen(this.book.tradesAfterSnapshot(position).map(({ trades, at }) => ({ trades: (trades as PackedTrade[]).map(unpack), at })));
    const block = this.blocks.newest();
    if (block && block.lastSeq > record.tradeSeq) {
      record.tradeSeq = block.lastSeq;
      record.lastUpdateAt = Math.max(record.lastUpdateAt, block.appliedAt);
    }
  }

  /** Changes fields of the market's record: one row written, however many fields. */
  writeRecord(changes: Partial<MarketRecord>): void {
    const record = { ...this.current(), ...changes };
    this.putMeta(RECORD_KEY, JSON.stringify(record));
    this.record = record;
  }

  /**
   * Changes fields of the record that the log and the blocks keep anyway (DERIVED_FIELDS), in
   * memory only; the next write of the record carries them, and a load reads them back.
   */
  noteRecord(changes: Partial<MarketRecord>): void {
    this.record = { ...this.current(), ...changes };
  }

  /** The book's sequence as last committed (a batch staged for the tick is not in it yet). */
  committedBookSequence(): number {
    return this.current().bookSequence;
  }

  /** Where the book's log stands. */
  bookPosition(): { snapshotN: number; logN: number } {
    const { bookSnapshotN, bookLogN } = this.current();
    return { snapshotN: bookSnapshotN, logN: bookLogN };
  }

  /** Whether a trade of this id and time was taken in the last 25 hours at least, or is still hot. */
  hasTrade(id: string, time: number): boolean {
    return this.knownAmong([{ id, time }]).size > 0;
  }

  /** The ids of `trades` taken in the last 25 hours, or still hot (looked up for a whole batch at once). */
  knownAmong(trades: readonly { id: string; time: number }[]): Set<string> {
    return this.tradeIds.among(trades);
  }

  /** A commit's accepted trades, in the order applied: into the open block (the commit's log row holds them). */
  appendTrades(trades: readonly StoredTrade[], now: number): void {
    this.blocks.append(trades, now);
  }

  /** Whether the open block is due before the minute (its size). */
  openBlockFull(): boolean {
    return this.blocks.openFull;
  }

  /** Writes the open block as a row (with the buckets' write, at a snapshot of the log, or once it is full). */
  sealTrades(): void {
    this.blocks.seal();
  }

  /** Trades just taken, or taken before a restart and not written with the ids yet: known from now on; written by `writeIds`. */
  rememberIds(trades: readonly StoredTrade[]): void {
    this.tradeIds.remember(trades);
  }

  /** The ids waiting for their write: how many, and their bytes. */
  pendingIds(): { count: number; bytes: number } {
    return { count: this.tradeIds.pendingCount, bytes: this.tradeIds.pendingBytes };
  }

  /** Whether a write of the ids holding back the minutes from `heldFrom` on would write a row. */
  idsWritable(heldFrom: number): boolean {
    return this.tradeIds.writable(heldFrom);
  }

  /** Writes the waiting ids but those of the minutes from `heldFrom` on (with the staged buckets, under the same `bucketsThroughSeq`). */
  writeIds(now: number, heldFrom: number): void {
    this.tradeIds.write(now, heldFrom);
  }

  /**
   * One page of trades in the order the market applied them (`seq`, the public `tradeId`), for
   * `GET /api/trades?fromId=|before=|startTime=|endTime=` (docs/api.md#trade-history): from
   * `fromId` forwards, or the `limit` just before `before`, or within the time bounds — the
   * first `limit` from `startTime`, else the last `limit` up to `endTime`.
   */
  tradePage(page: TradePage, after = 0): StoredTrade[] {
    return this.blocks.page(page, after, pageRunsForwards(page));
  }

  /** The stored trades after `seq`, in the order they were applied. */
  tradesAfter(seq: number): StoredTrade[] {
    return this.blocks.between(seq + 1, Number.MAX_SAFE_INTEGER);
  }

  /**
   * The trades the stored buckets do not hold, in the order applied: those after `throughSeq`,
   * and those up to it whose time is from `heldFrom` on (the minute a flush held back).
   */
  tradesUnwritten(throughSeq: number, heldFrom: number | undefined): StoredTrade[] {
    const held = heldFrom === undefined ? [] : this.blocks.page({ startTime: heldFrom, before: throughSeq + 1, limit: Number.MAX_SAFE_INTEGER }, 0, true);
    return [...held, ...this.tradesAfter(throughSeq)];
  }

  /** The newest trades by time (ties: later arrival first). */
  latestTrades(limit: number): StoredTrade[] {
    return this.blocks.latest(limit);
  }

  /** The quantity of the latest trade by time (the last applied among equal times): the ticker's `lastQty`. */
  latestTradeQuantity(): bigint | undefined {
    return this.blocks.latest(1)[0]?.quantity;
  }

  /** Drops second buckets older than `before`, and the hours of archived ids expired at `now`. */
  prune(before: number, now: number): void {
    this.candles.pruneSeconds(before);
    this.tradeIds.forget(now, this.archivedThrough());
  }

  /** The first hour whose book files are due (docs/history.md#book-files); 0: none. */
  bookHoursFrom(): number {
    return this.current().bookHoursFrom ?? 0;
  }

  /** Trade ids up to this one are in the archive (docs/history.md#trades); 0: none. */
  archivedThrough(): number {
    return this.current().archivedThrough;
  }

  /**
   * The trades of the next chunk to archive, if it is due: the chunk after the last archived (or,
   * for a market from before the archive, the one holding its oldest kept trade), complete, and
   * wholly older than `before` — or, however young, with more than `hotMost` trades after it
   * (a busy market's hot rows are bounded by count: 25 hours of 1,000 a second would not fit).
   */
  dueChunk(size: number, before: number, tradeSeq: number, hotMost: number): { chunk: number; trades: StoredTrade[] } | undefined {
    const oldest = this.blocks.firstAfter(this.archivedThrough());
    if (oldest === null) return undefined;
    const chunk = Math.floor((oldest - 1) / size);
    const last = (chunk + 1) * size;
    if (last > tradeSeq) return undefined; // not complete yet
    const newest = this.blocks.latestTimeBetween(chunk * size + 1, last) ?? 0;
    if (newest >= before && tradeSeq - last <= hotMost) return undefined;
    return { chunk, trades: this.blocks.between(chunk * size + 1, last) };
  }

  /**
   * A chunk is in R2: index it, and let its trades go from here except the newest `keepTrades`
   * (the latest-trades answer reads those). Pages read ids up to `archivedThrough` from R2.
   */
  chunkArchived(
    chunk: { chunk: number; firstSeq: number; lastSeq: number; minTime: number; maxTime: number; trades: number; bytes: number },
    keepTrades: number,
    newestSeq: number,
  ): void {
    this.transaction(() => {
      this.sql.exec(
        "INSERT OR REPLACE INTO archive_chunks (chunk, first_seq, last_seq, min_time, max_time, trades, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)",
        chunk.chunk,
        chunk.firstSeq,
        chunk.lastSeq,
        chunk.minTime,
        chunk.maxTime,
        chunk.trades,
        chunk.bytes,
      );
      this.blocks.dropThrough(chunk.lastSeq, newestSeq, keepTrades);
      this.writeRecord({ archivedThrough: chunk.lastSeq });
    });
  }

  /**
   * Up to `limit` archived chunks that may hold trades of `page` (their ids and times against its
   * bounds), in the page's direction: ascending for a forward page, else descending.
   */
  chunksFor(page: Omit<TradePage, "limit">, forwards: boolean, limit: number): ArchivedChunk[] {
    const bounds: [string, number | undefined][] = [
      ["last_seq >= ?", page.fromId],
      ["first_seq < ?", page.before],
      ["max_time >= ?", page.startTime],
      ["min_time <= ?", page.endTime],
    ];
    const { filter, args } = whereOf(bounds);
    return this.sql
      .exec<{ chunk: number; first_seq: number; last_seq: number; min_time: number; max_time: number; trades: number; bytes: number }>(
        `SELECT * FROM archive_chunks ${filter} ORDER BY chunk ${forwards ? "ASC" : "DESC"} LIMIT ?`,
        ...args,
        limit,
      )
      .toArray()
      .map((r) => ({ chunk: r.chunk, firstSeq: r.first_seq, lastSeq: r.last_seq, minTime: r.min_time, maxTime: r.max_time, trades: r.trades, bytes: r.bytes }));
  }

  transaction<T>(work: () => T): T {
    return this.storage.transactionSync(work);
  }
}
