import { SECOND_MS } from "../history/intervals";
import type { ArchivedChunk } from "../history/trade-archive";
import type { MarketConfig } from "../registry/model";
import { BookLog } from "./book-log";
import { BucketStore } from "./bucket-store";
import { RecentTradeIds } from "./recent-trade-ids";

/** A stored trade; prices and quantities are integer units at the market's scales. */
export interface StoredTrade {
  id: string;
  seq: number;
  price: bigint;
  quantity: bigint;
  side: "buy" | "sell";
  time: number;
}

/** A page of the trade history: any of the bounds, and how many. */
export interface TradePage {
  fromId?: number;
  before?: number;
  startTime?: number;
  endTime?: number;
  limit: number;
}

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
  /** When the market last applied an ingest batch that changed it (its feed's last word). */
  lastUpdateAt: number;
  /** Trade ids up to this one are in the archive (docs/history.md#trades); 0: none. */
  archivedThrough: number;
  /** Past UTC days that took a late trade since their files were last written (docs/history.md#daily-files), as JSON. */
  dirtyDays: string;
}

export interface MarketMeta extends MarketRecord {
  /** The newest config the market was given (from the registry). */
  config: MarketConfig | undefined;
  /** StreamHub shards subscribed to this market. */
  shards: string[];
}

const RECORD_KEY = "record";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trades (
  id TEXT PRIMARY KEY, seq INTEGER NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL,
  side TEXT NOT NULL, time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS trades_by_seq ON trades (seq);
CREATE INDEX IF NOT EXISTS trades_by_time ON trades (time);
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

type Row = Record<string, SqlStorageValue>;

function toTrade(row: Row): StoredTrade {
  return {
    id: row.id as string,
    seq: row.seq as number,
    price: BigInt(row.price as string),
    quantity: BigInt(row.quantity as string),
    side: row.side as "buy" | "sell",
    time: row.time as number,
  };
}

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
  /** Ids of trades archived in the last 25 hours and more: a resend of one is still a duplicate. */
  private readonly recentIds: RecentTradeIds;
  /** The candle buckets: seconds, minutes, hours and days. */
  readonly candles: BucketStore;
  /** The book, as a snapshot and a log of batches' changes. */
  readonly book: BookLog;
  /** The market's record as last read or written (loaded on first use). */
  private record: MarketRecord | undefined;

  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(SCHEMA);
    this.recentIds = new RecentTradeIds(storage.sql);
    this.candles = new BucketStore(storage.sql);
    this.book = new BookLog(storage.sql);
    // Markets created before the taker-buy volumes were kept: their older minutes count none.
    const columns = storage.sql.exec<{ name: string }>("PRAGMA table_info(minute_buckets)").toArray();
    if (!columns.some((c) => c.name === "taker_buy_volume")) {
      storage.sql.exec("ALTER TABLE minute_buckets ADD COLUMN taker_buy_volume TEXT NOT NULL DEFAULT '0'");
      storage.sql.exec("ALTER TABLE minute_buckets ADD COLUMN taker_buy_quote_volume TEXT NOT NULL DEFAULT '0'");
    }
    // Markets from before imports: every minute they hold came from live trades.
    if (!columns.some((c) => c.name === "imported")) storage.sql.exec("ALTER TABLE minute_buckets ADD COLUMN imported INTEGER NOT NULL DEFAULT 0");
    // Markets from before the hour and day buckets: built once from their minutes.
    const rollups = storage.sql.exec("SELECT 1 FROM meta WHERE key = 'rollups'").toArray();
    if (rollups.length === 0) {
      storage.transactionSync(() => {
        this.candles.rebuildRollups(0, Number.MAX_SAFE_INTEGER);
        storage.sql.exec("INSERT INTO meta (key, value) VALUES ('rollups', '1')");
      });
    }
  }

  private get sql(): SqlStorage {
    return this.storage.sql;
  }

  readMeta(): MarketMeta {
    const values = new Map<string, string>();
    for (const row of this.sql.exec<{ key: string; value: string }>("SELECT key, value FROM meta")) values.set(row.key, row.value);
    // Markets from before the one record kept a row per field.
    const record: MarketRecord = values.has(RECORD_KEY)
      ? (JSON.parse(values.get(RECORD_KEY)!) as MarketRecord)
      : ({
          bookSequence: Number(values.get("bookSequence") ?? 0),
          bookUpdatedAt: Number(values.get("bookUpdatedAt") ?? 0),
          bookFingerprint: values.get("bookFingerprint") ?? "",
          bookSnapshotN: 0,
          bookLogN: 0,
          tradeSeq: Number(values.get("tradeSeq") ?? 0),
          lastUpdateAt: Number(values.get("lastUpdateAt") ?? 0),
          archivedThrough: Number(values.get("archivedThrough") ?? 0),
          dirtyDays: values.get("dirtyDays") ?? "[]",
        } as MarketRecord);
    // Markets from before the staged buckets wrote every bucket with its trades.
    record.bucketsThroughSeq ??= record.tradeSeq;
    this.record = record;
    return {
      ...record,
      config: values.has("config") ? (JSON.parse(values.get("config")!) as MarketConfig) : undefined,
      shards: JSON.parse(values.get("shards") ?? "[]") as string[],
    };
  }

  /** The config and the shards: rows of their own, written when they change (rarely). */
  writeMeta(key: "config" | "shards", value: string): void {
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  /** The market's record as stored. */
  private current(): MarketRecord {
    if (!this.record) this.readMeta();
    return this.record!;
  }

  /** Changes fields of the market's record: one row written, however many fields. */
  writeRecord(changes: Partial<MarketRecord>): void {
    const record = { ...this.current(), ...changes };
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", RECORD_KEY, JSON.stringify(record));
    this.record = record;
  }

  /** Where the book's log stands. */
  bookPosition(): { snapshotN: number; logN: number } {
    const { bookSnapshotN, bookLogN } = this.current();
    return { snapshotN: bookSnapshotN, logN: bookLogN };
  }

  /** Whether a trade of this id was taken in the last 25 hours at least: hot, or archived since. */
  hasTrade(id: string): boolean {
    return this.hasHotTrade(id) || this.archivedAmong([id]).size > 0;
  }

  /** Whether a trade of this id is in the hot table (rows inserted in the running transaction too). */
  hasHotTrade(id: string): boolean {
    return this.sql.exec("SELECT 1 FROM trades WHERE id = ?", id).toArray().length > 0;
  }

  /** The ids of `ids` whose trades were archived in the last 25 hours (one look-up for a whole batch). */
  archivedAmong(ids: readonly string[]): Set<string> {
    return this.recentIds.among(ids);
  }

  insertTrade(trade: StoredTrade): void {
    this.sql.exec(
      "INSERT INTO trades (id, seq, price, quantity, side, time) VALUES (?, ?, ?, ?, ?, ?)",
      trade.id,
      trade.seq,
      trade.price.toString(),
      trade.quantity.toString(),
      trade.side,
      trade.time,
    );
  }

  /**
   * One page of trades in the order the market applied them (`seq`, the public `tradeId`), for
   * `GET /api/trades?fromId=|before=|startTime=|endTime=` (docs/api.md#trade-history): from
   * `fromId` forwards, or the `limit` just before `before`, or within the time bounds — the
   * first `limit` from `startTime`, else the last `limit` up to `endTime`.
   */
  tradePage(page: TradePage, after = 0): StoredTrade[] {
    const bounds: [string, number | undefined][] = [
      ["seq > ?", after > 0 ? after : undefined],
      ["seq >= ?", page.fromId],
      ["seq < ?", page.before],
      ["time >= ?", page.startTime],
      ["time <= ?", page.endTime],
    ];
    const { filter, args } = whereOf(bounds);
    const forwards = page.fromId !== undefined || (page.before === undefined && page.startTime !== undefined);
    const rows = this.sql
      .exec(`SELECT * FROM trades ${filter} ORDER BY seq ${forwards ? "ASC" : "DESC"} LIMIT ?`, ...args, page.limit)
      .toArray()
      .map(toTrade);
    // A backward page is read newest first and answered in tradeId order.
    return forwards ? rows : rows.reverse();
  }

  /** The stored trades after `seq`, in the order they were applied. */
  tradesAfter(seq: number): StoredTrade[] {
    return this.sql.exec("SELECT * FROM trades WHERE seq > ? ORDER BY seq", seq).toArray().map(toTrade);
  }

  /** The newest trades by time (ties: later arrival first). */
  latestTrades(limit: number): StoredTrade[] {
    return this.sql.exec("SELECT * FROM trades ORDER BY time DESC, seq DESC LIMIT ?", limit).toArray().map(toTrade);
  }

  /** The quantity of the latest trade by time (the last applied among equal times): the ticker's `lastQty`. */
  latestTradeQuantity(): bigint | undefined {
    const row = this.sql.exec("SELECT quantity FROM trades ORDER BY time DESC, seq DESC LIMIT 1").toArray()[0];
    return row ? BigInt(row.quantity as string) : undefined;
  }

  /** Drops second buckets older than `before`, and the hours of archived ids expired at `now`. */
  prune(before: number, now: number): void {
    this.sql.exec("DELETE FROM rollup_buckets WHERE size = ? AND start < ?", SECOND_MS, before);
    this.recentIds.forget(now);
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
    const oldest = this.sql.exec<{ seq: number | null }>("SELECT MIN(seq) AS seq FROM trades WHERE seq > ?", this.archivedThrough()).one().seq;
    if (oldest === null) return undefined;
    const chunk = Math.floor((oldest - 1) / size);
    const last = (chunk + 1) * size;
    if (last > tradeSeq) return undefined; // not complete yet
    const newest = this.sql.exec<{ time: number }>("SELECT MAX(time) AS time FROM trades WHERE seq > ? AND seq <= ?", chunk * size, last).one().time;
    if (newest >= before && tradeSeq - last <= hotMost) return undefined;
    const trades = this.sql
      .exec("SELECT * FROM trades WHERE seq > ? AND seq <= ? ORDER BY seq", chunk * size, last)
      .toArray()
      .map(toTrade);
    return { chunk, trades };
  }

  /**
   * A chunk is in R2: index it, and let its trades go from here except the newest `keepTrades`
   * (the latest-trades answer reads those). Pages read ids up to `archivedThrough` from R2.
   */
  chunkArchived(
    chunk: { chunk: number; firstSeq: number; lastSeq: number; minTime: number; maxTime: number; trades: number; bytes: number },
    keepTrades: number,
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
      const gone = this.sql
        .exec<{ id: string }>(
          "DELETE FROM trades WHERE seq <= ? AND seq NOT IN (SELECT seq FROM trades ORDER BY seq DESC LIMIT ?) RETURNING id",
          chunk.lastSeq,
          keepTrades,
        )
        .toArray();
      this.recentIds.remember(
        gone.map((row) => row.id),
        Date.now(),
      );
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
