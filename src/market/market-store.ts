import type { MarketConfig } from "../registry/model";
import type { UnitLevel } from "./order-book";
import type { MinuteBucket } from "./rolling-window";

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
  taker_buy_volume TEXT NOT NULL DEFAULT '0', taker_buy_quote_volume TEXT NOT NULL DEFAULT '0');
CREATE TABLE IF NOT EXISTS book_levels (
  side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL, PRIMARY KEY (side, price));
`;

type Row = Record<string, SqlStorageValue>;

function toBucket(row: Row): MinuteBucket {
  return {
    minute: row.minute as number,
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

/**
 * All SQLite access of one MarketObject. Big integers are stored as decimal text because
 * SQLite integers come back as JS numbers, which would round volumes above 2^53.
 */
export class MarketStore {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(SCHEMA);
    // Markets created before the taker-buy volumes were kept: their older minutes count none.
    const columns = storage.sql.exec<{ name: string }>("PRAGMA table_info(minute_buckets)").toArray();
    if (!columns.some((c) => c.name === "taker_buy_volume")) {
      storage.sql.exec("ALTER TABLE minute_buckets ADD COLUMN taker_buy_volume TEXT NOT NULL DEFAULT '0'");
      storage.sql.exec("ALTER TABLE minute_buckets ADD COLUMN taker_buy_quote_volume TEXT NOT NULL DEFAULT '0'");
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

  hasTrade(id: string): boolean {
    return this.sql.exec("SELECT 1 FROM trades WHERE id = ?", id).toArray().length > 0;
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
  tradePage(page: TradePage): StoredTrade[] {
    const bounds: [string, number | undefined][] = [
      ["seq >= ?", page.fromId],
      ["seq < ?", page.before],
      ["time >= ?", page.startTime],
      ["time <= ?", page.endTime],
    ];
    const used = bounds.filter((bound): bound is [string, number] => bound[1] !== undefined);
    const filter = used.length > 0 ? `WHERE ${used.map(([condition]) => condition).join(" AND ")}` : "";
    const args = used.map(([, value]) => value);
    const forwards = page.fromId !== undefined || (page.before === undefined && page.startTime !== undefined);
    if (forwards)
      return this.sql
        .exec(`SELECT * FROM trades ${filter} ORDER BY seq ASC LIMIT ?`, ...args, page.limit)
        .toArray()
        .map(toTrade);
    return this.sql
      .exec(`SELECT * FROM trades ${filter} ORDER BY seq DESC LIMIT ?`, ...args, page.limit)
      .toArray()
      .map(toTrade)
      .reverse();
  }

  /** The newest trades by time (ties: later arrival first). */
  latestTrades(limit: number): StoredTrade[] {
    return this.sql.exec("SELECT * FROM trades ORDER BY time DESC, seq DESC LIMIT ?", limit).toArray().map(toTrade);
  }

  upsertBucket(bucket: MinuteBucket): void {
    this.sql.exec(
      `INSERT INTO minute_buckets (minute, open, high, low, close, first_trade_time, last_trade_time, volume, quote_volume, trade_count,
         taker_buy_volume, taker_buy_quote_volume)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (minute) DO UPDATE SET open = excluded.open, high = excluded.high, low = excluded.low,
         close = excluded.close, first_trade_time = excluded.first_trade_time, last_trade_time = excluded.last_trade_time,
         volume = excluded.volume, quote_volume = excluded.quote_volume, trade_count = excluded.trade_count,
         taker_buy_volume = excluded.taker_buy_volume, taker_buy_quote_volume = excluded.taker_buy_quote_volume`,
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

  /** Buckets with `from <= minute <= to`, lazily, ascending or descending. */
  *bucketsBetween(from: number, to: number, order: "ASC" | "DESC"): Generator<MinuteBucket> {
    const cursor = this.sql.exec(`SELECT * FROM minute_buckets WHERE minute >= ? AND minute <= ? ORDER BY minute ${order}`, from, to);
    for (const row of cursor) yield toBucket(row);
  }

  /** The bucket holding the latest trade by time, which carries the market's last price. */
  /** The quantity of the latest trade by time (the last applied among equal times): the ticker's `lastQty`. */
  latestTradeQuantity(): bigint | undefined {
    const row = this.sql.exec("SELECT quantity FROM trades ORDER BY time DESC, seq DESC LIMIT 1").toArray()[0];
    return row ? BigInt(row.quantity as string) : undefined;
  }

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

  /**
   * Drops what no reader needs any more: trades older than `tradesBefore` beyond the newest
   * `keepTrades`, and minute buckets older than `bucketsBefore`.
   */
  prune(tradesBefore: number, keepTrades: number, bucketsBefore: number): void {
    this.sql.exec("DELETE FROM trades WHERE time < ? AND seq NOT IN (SELECT seq FROM trades ORDER BY seq DESC LIMIT ?)", tradesBefore, keepTrades);
    this.sql.exec("DELETE FROM minute_buckets WHERE minute < ?", bucketsBefore);
  }

  transaction<T>(work: () => T): T {
    return this.storage.transactionSync(work);
  }
}
