import { type BucketSize, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from "../history/intervals";
import type { ArchivedChunk } from "../history/trade-archive";
import type { MarketConfig } from "../registry/model";
import type { UnitLevel } from "./order-book";
import { RecentTradeIds } from "./recent-trade-ids";
import { type MinuteBucket, mergeBuckets } from "./rolling-window";

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

export interface MarketMeta {
  /** The newest config the market was given (from the registry). */
  config: MarketConfig | undefined;
  /** StreamHub shards subscribed to this market. */
  shards: string[];
  bookSequence: number;
  bookUpdatedAt: number;
  /** Fingerprint of the last applied book update: a replay is recognised after an eviction too. */
  bookFingerprint: string;
  tradeSeq: number;
  /** When the market last applied an ingest batch that changed it (its feed's last word). */
  lastUpdateAt: number;
  /** Trade ids up to this one are in the archive (docs/history.md#trades); 0: none. */
  archivedThrough: number;
  /** Past UTC days that took a late trade since their files were last written (docs/history.md#daily-files). */
  dirtyDays: string;
}

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
CREATE TABLE IF NOT EXISTS book_levels (
  side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL, PRIMARY KEY (side, price));
`;

type Row = Record<string, SqlStorageValue>;

function toBucket(row: Row): MinuteBucket {
  return {
    minute: (row.minute ?? row.start) as number,
    open: BigInt(row.open as string),
    high: BigInt(row.high as string),
    low: BigInt(row.low as string),
    close: BigInt(row.close as string),
    firstTradeTime: row.first_trade_time as number,
    lastTradeTime: row.last_trade_time as number,
    volume: BigInt(row.volume as string),
    quoteVolume: BigInt(row.quote_volume as string),
    takerBuyVolume: BigInt(row.taker_buy_volume as string),
    takerBuyQuoteVolume: BigInt(row.taker_buy_quote_volume as string),
    count: row.trade_count as number,
  };
}

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

  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(SCHEMA);
    this.recentIds = new RecentTradeIds(storage.sql);
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
        this.rebuildRollups(0, Number.MAX_SAFE_INTEGER);
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
    return {
      config: values.has("config") ? (JSON.parse(values.get("config")!) as MarketConfig) : undefined,
      shards: JSON.parse(values.get("shards") ?? "[]") as string[],
      bookSequence: Number(values.get("bookSequence") ?? 0),
      bookUpdatedAt: Number(values.get("bookUpdatedAt") ?? 0),
      bookFingerprint: values.get("bookFingerprint") ?? "",
      tradeSeq: Number(values.get("tradeSeq") ?? 0),
      lastUpdateAt: Number(values.get("lastUpdateAt") ?? 0),
      archivedThrough: Number(values.get("archivedThrough") ?? 0),
      dirtyDays: values.get("dirtyDays") ?? "[]",
    };
  }

  writeMeta(key: keyof MarketMeta, value: string | number): void {
    this.writeMetas([[key, value]]);
  }

  /** Several metadata values in one statement (an ingest batch writes up to five). */
  writeMetas(entries: readonly (readonly [keyof MarketMeta, string | number])[]): void {
    if (entries.length === 0) return;
    this.sql.exec(
      `INSERT INTO meta (key, value) VALUES ${entries.map(() => "(?, ?)").join(", ")} ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      ...entries.flatMap(([key, value]) => [key, String(value)]),
    );
  }

  /** Whether a trade of this id was taken in the last 25 hours at least: hot, or archived since. */
  hasTrade(id: string): boolean {
    return this.sql.exec("SELECT 1 FROM trades WHERE id = ?", id).toArray().length > 0 || this.recentIds.has(id);
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

  /** The newest trades by time (ties: later arrival first). */
  latestTrades(limit: number): StoredTrade[] {
    return this.sql.exec("SELECT * FROM trades ORDER BY time DESC, seq DESC LIMIT ?", limit).toArray().map(toTrade);
  }

  /**
   * Writes one bucket of `size` (docs/history.md#layout): minutes in their own table, the rest as
   * rollups. A minute written from live trades is live from then on; `imported` marks an import's.
   */
  upsertBucket(bucket: MinuteBucket, size: BucketSize = MINUTE_MS, imported = false): void {
    const [table, key, keyValues] =
      size === MINUTE_MS ? ["minute_buckets", "minute", `${imported ? 1 : 0}, ?`] : ["rollup_buckets", "size, start", `${size}, ?`];
    const extra = size === MINUTE_MS ? ["imported, ", ", imported = excluded.imported"] : ["", ""];
    this.sql.exec(
      `INSERT INTO ${table} (${extra[0]}${key}, open, high, low, close, first_trade_time, last_trade_time, volume, quote_volume, trade_count,
         taker_buy_volume, taker_buy_quote_volume)
       VALUES (${keyValues}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (${key}) DO UPDATE SET open = excluded.open, high = excluded.high, low = excluded.low,
         close = excluded.close, first_trade_time = excluded.first_trade_time, last_trade_time = excluded.last_trade_time,
         volume = excluded.volume, quote_volume = excluded.quote_volume, trade_count = excluded.trade_count,
         taker_buy_volume = excluded.taker_buy_volume, taker_buy_quote_volume = excluded.taker_buy_quote_volume${extra[1]}`,
      bucket.minute,
      bucket.open.toString(),
      bucket.high.toString(),
      bucket.low.toString(),
      bucket.close.toString(),
      bucket.firstTradeTime,
      bucket.lastTradeTime,
      bucket.volume.toString(),
      bucket.quoteVolume.toString(),
      bucket.count,
      bucket.takerBuyVolume.toString(),
      bucket.takerBuyQuoteVolume.toString(),
    );
  }

  /** The minutes stored within `from`…`to`, and whether each was imported (else it holds live trades). */
  storedMinutes(from: number, to: number): { minute: number; imported: number }[] {
    return this.sql
      .exec<{ minute: number; imported: number }>("SELECT minute, imported FROM minute_buckets WHERE minute >= ? AND minute <= ?", from, to)
      .toArray();
  }

  /** The bucket of `size` starting at `start`, if it holds trades. */
  bucketAt(size: BucketSize, start: number): MinuteBucket | undefined {
    return this.buckets(size, start, start, "ASC").next().value ?? undefined;
  }

  /** Bucket rows read by `buckets()` over this store's life (tests read it; the cost counters come from the same cursors). */
  bucketRowsRead = 0;

  /** Buckets of `size` starting within `from`…`to`, lazily, ascending or descending. */
  *buckets(size: BucketSize, from: number, to: number, order: "ASC" | "DESC"): Generator<MinuteBucket> {
    const cursor =
      size === MINUTE_MS
        ? this.sql.exec(`SELECT * FROM minute_buckets WHERE minute >= ? AND minute <= ? ORDER BY minute ${order}`, from, to)
        : this.sql.exec(`SELECT * FROM rollup_buckets WHERE size = ? AND start >= ? AND start <= ? ORDER BY start ${order}`, size, from, to);
    try {
      for (const row of cursor) yield toBucket(row);
    } finally {
      this.bucketRowsRead += cursor.rowsRead;
    }
  }

  /**
   * Buckets that tile `from`…`to` (`from` aligned to the finest size), ascending: the finest at the
   * ragged edges and ever coarser ones between them (`sizes` ascending), so a 7-day window reads
   * about 300 rows of minutes and hours, not 10,080, and a month at +05:30 about 150 of minutes,
   * hours and days, not 44,640.
   */
  *tileBuckets(from: number, to: number, sizes: readonly BucketSize[]): Generator<MinuteBucket> {
    const [fine, coarse] = sizes as [BucketSize, BucketSize | undefined];
    const firstCoarse = coarse === undefined ? 0 : Math.ceil(from / coarse) * coarse;
    const endOfCoarse = coarse === undefined ? 0 : Math.floor((to + 1) / coarse) * coarse; // coarse buckets that end within the span
    if (firstCoarse >= endOfCoarse) {
      yield* this.buckets(fine, from, to, "ASC");
      return;
    }
    yield* this.buckets(fine, from, firstCoarse - 1, "ASC");
    yield* this.tileBuckets(firstCoarse, endOfCoarse - 1, sizes.slice(1));
    yield* this.buckets(fine, endOfCoarse, to, "ASC");
  }

  /** `tileBuckets` with two sizes: `fine` at the edges, `coarse` between. */
  spanBuckets(from: number, to: number, fine: BucketSize = MINUTE_MS, coarse: BucketSize = HOUR_MS): Generator<MinuteBucket> {
    return this.tileBuckets(from, to, [fine, coarse]);
  }

  /**
   * Builds the hour and day buckets over `from`…`to` again from the minutes, which are the
   * source of every coarser candle (after an import replaced minutes, or once for old markets).
   */
  rebuildRollups(from: number, to: number): void {
    for (const size of [HOUR_MS, DAY_MS] as const) {
      const first = Math.floor(from / size) * size;
      const last = Math.floor(to / size) * size;
      this.sql.exec("DELETE FROM rollup_buckets WHERE size = ? AND start >= ? AND start <= ?", size, first, last);
      let group: MinuteBucket[] = [];
      const flush = () => {
        const merged = mergeBuckets(group);
        if (merged) this.upsertBucket({ ...merged, minute: Math.floor(group[0]!.minute / size) * size }, size);
        group = [];
      };
      for (const minute of this.buckets(MINUTE_MS, first, Math.min(last + size - 1, Number.MAX_SAFE_INTEGER), "ASC")) {
        if (group.length > 0 && Math.floor(minute.minute / size) !== Math.floor(group[0]!.minute / size)) flush();
        group.push(minute);
      }
      flush();
    }
  }

  /** The quantity of the latest trade by time (the last applied among equal times): the ticker's `lastQty`. */
  latestTradeQuantity(): bigint | undefined {
    const row = this.sql.exec("SELECT quantity FROM trades ORDER BY time DESC, seq DESC LIMIT 1").toArray()[0];
    return row ? BigInt(row.quantity as string) : undefined;
  }

  /** The bucket holding the latest trade by time, which carries the market's last price. */
  latestBucket(): MinuteBucket | undefined {
    const row = this.sql.exec("SELECT * FROM minute_buckets ORDER BY minute DESC LIMIT 1").toArray()[0];
    return row ? toBucket(row) : undefined;
  }

  replaceBook(bids: readonly UnitLevel[], asks: readonly UnitLevel[]): void {
    this.sql.exec("DELETE FROM book_levels");
    this.writeLevels("bids", bids);
    this.writeLevels("asks", asks);
  }

  writeLevels(side: "bids" | "asks", levels: readonly UnitLevel[]): void {
    for (const [price, quantity] of levels) {
      if (quantity === 0n) this.sql.exec("DELETE FROM book_levels WHERE side = ? AND price = ?", side, price.toString());
      else
        this.sql.exec(
          "INSERT INTO book_levels (side, price, quantity) VALUES (?, ?, ?) ON CONFLICT (side, price) DO UPDATE SET quantity = excluded.quantity",
          side,
          price.toString(),
          quantity.toString(),
        );
    }
  }

  readBook(): { bids: UnitLevel[]; asks: UnitLevel[] } {
    const book = { bids: [] as UnitLevel[], asks: [] as UnitLevel[] };
    for (const row of this.sql.exec<{ side: "bids" | "asks"; price: string; quantity: string }>("SELECT side, price, quantity FROM book_levels")) {
      book[row.side].push([BigInt(row.price), BigInt(row.quantity)]);
    }
    return book;
  }

  /** Second buckets older than `before` go (minutes and coarser are kept for ever; trades go to the archive). */
  /** Drops second buckets older than `before`, and the hours of archived ids expired at `now`. */
  prune(before: number, now: number): void {
    this.sql.exec("DELETE FROM rollup_buckets WHERE size = ? AND start < ?", SECOND_MS, before);
    this.recentIds.forget(now);
  }

  /** Trade ids up to this one are in the archive (docs/history.md#trades); 0: none. */
  archivedThrough(): number {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'archivedThrough'").toArray()[0];
    return row ? Number(row.value) : 0;
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
      this.writeMeta("archivedThrough", chunk.lastSeq);
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
