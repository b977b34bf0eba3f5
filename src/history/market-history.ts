import { gunzipText, gzipText } from "../core/encoding";
import type { MarketStore, StoredTrade, TradePage } from "../market/market-store";
import { pageRunsForwards } from "../market/trades";
import { type WireTrade, wireTrade } from "../market/wire-trade";
import type { MarketConfig } from "../registry/model";
import type { Kline } from "./candles";
import { aggTradesCsv, csvName, type DailyKind, dailyKey, dayName, klinesCsv, tradesCsv } from "./daily-files";
import { ZIP_PUT } from "./file-storage";
import { DAY_MS } from "./intervals";
import { type ArchivedChunk, type ArchivedTrade, chunkKey, chunkSize, MAX_CHUNK_READS, withinPage } from "./trade-archive";
import { checksumLine, zipOne } from "./zip";

/**
 * Hot trades beyond 25 hours' worth are archived anyway past this count: about 200 MB of rows
 * and indexes, a fiftieth of an object's 10 GB (docs/capacity.md#history-a-year-of-one-busy-market-and-of-a-venue).
 */
const HOT_MOST_TRADES = 1_000_000;
/** A day's trades files are written in one run up to this many trades (about 30 MB of CSV). */
const MAX_DAY_TRADES = 500_000;
/** The newest trades stay in SQLite whatever their age: the latest-trades answer reads them. */
export const KEEP_TRADES = 1000;

/** What writing one day's files did (`POST /admin/archive`, the daily cron). */
export interface DayFiles {
  symbol: string;
  date: string;
  trades: number;
  files: { key: string; bytes: number; sha256: string }[];
  /** Why the trades files were not written, when they were not. */
  skipped?: string;
  /** Past days written again because late trades reached them (YYYY-MM-DD). */
  rewritten?: string[];
  /** Why the market's files were not written in this run (they are at the next). */
  failed?: string;
}

/**
 * A market's history beyond its hot rows (docs/history.md): the trade archive in R2, the pages
 * that read it with SQLite as one list, and the daily files. Part of the market object, which
 * stays the single writer: it holds one of these over its own store and calls it.
 */
export class MarketHistory {
  /** The archive is being written (one run at a time). */
  private archiving = false;

  constructor(
    private readonly store: MarketStore,
    private readonly bucket: R2Bucket,
    private readonly chunkTrades: string | undefined,
  ) {}

  /** Whether `archive` would move a chunk now (its checks are a few index reads until one is due). */
  archiveDue(tradeSeq: number, hotSince: number, hotMost = HOT_MOST_TRADES): boolean {
    return this.store.dueChunk(chunkSize(this.chunkTrades), hotSince, tradeSeq, hotMost) !== undefined;
  }

  /**
   * Moves complete chunks of trades older than `hotSince` to R2 (docs/history.md#trades), a few a
   * run: each chunk is written first, then indexed and let go here, so a failure between the two
   * writes the same chunk again next time (the same bytes). Returns the chunks moved.
   */
  async archive(market: MarketConfig, tradeSeq: number, hotSince: number, most = 16, hotMost = HOT_MOST_TRADES): Promise<number> {
    if (this.archiving) return 0;
    this.archiving = true;
    try {
      const size = chunkSize(this.chunkTrades);
      let moved = 0;
      for (; moved < most; moved++) {
        const due = this.store.dueChunk(size, hotSince, tradeSeq, hotMost);
        if (!due) break;
        const trades = due.trades.map((t) => wireTrade(market, t));
        // Gzipped: about 110 bytes a trade as JSON, a fifth of that gzipped (docs/history.md#trades).
        const gzipped = await gzipText(JSON.stringify(trades));
        await this.bucket.put(chunkKey(market.symbol, due.chunk), gzipped, { httpMetadata: { contentType: "application/json", contentEncoding: "gzip" } });
        this.store.chunkArchived(
          {
            chunk: due.chunk,
            firstSeq: trades[0]!.tradeId,
            lastSeq: trades[trades.length - 1]!.tradeId,
            minTime: trades.reduce((least, t) => Math.min(least, t.time), Number.POSITIVE_INFINITY),
            maxTime: trades.reduce((most, t) => Math.max(most, t.time), 0),
            trades: trades.length,
            bytes: gzipped.byteLength,
          },
          KEEP_TRADES,
          tradeSeq,
        );
      }
      return moved;
    } finally {
      this.archiving = false;
    }
  }

  /**
   * A page of the trade history: ids up to `archivedThrough` from the archive's chunks in R2, the
   * rest from SQLite, joined in tradeId order without a gap or a repeat (docs/api.md#trade-history).
   */
  async tradePage(market: MarketConfig, page: TradePage): Promise<WireTrade[]> {
    const { limit, ...bounds } = page;
    const wire = (t: StoredTrade) => wireTrade(market, t);
    const archived = this.store.archivedThrough();
    // Both sources are taken now, before any await: the archiver may move a chunk meanwhile.
    const hotPart = this.store.tradePage({ ...bounds, limit }, archived).map(wire);
    if (archived === 0) return hotPart;
    const forwards = pageRunsForwards(bounds);
    const chunks = this.store.chunksFor(bounds, forwards, MAX_CHUNK_READS);
    if (forwards) {
      const out: WireTrade[] = [];
      for (const chunk of chunks) {
        out.push(...(await this.readChunk(market, chunk, bounds)));
        if (out.length >= limit) return out.slice(0, limit);
      }
      // More chunks than one page reads: the page ends where the archive read ended (short, never
      // with a gap); the next page, from its last id, goes on.
      if (chunks.length === MAX_CHUNK_READS && this.store.chunksFor({ ...bounds, fromId: chunks.at(-1)!.lastSeq + 1 }, true, 1).length > 0) return out;
      return [...out, ...hotPart.slice(0, limit - out.length)];
    }
    let out = hotPart;
    for (const chunk of chunks) {
      if (out.length >= limit) break;
      out = [...(await this.readChunk(market, chunk, bounds)).slice(-(limit - out.length)), ...out];
    }
    return out;
  }

  /**
   * Writes one UTC day's files to R2 in Binance's public-data layout (docs/history.md#daily-files):
   * trades, aggTrades and klines 1m/1h/1d, each a zip with its `.CHECKSUM`. A day without candles
   * writes nothing; an imported day (candles, no trades), or one of more than MAX_DAY_TRADES
   * trades, its klines only. Written again, a day gives the same bytes.
   */
  async writeDay(market: MarketConfig, day: number, candles: (interval: "1m" | "1h" | "1d", from: number, to: number) => Kline[]): Promise<DayFiles> {
    const { symbol } = market;
    const end = day + DAY_MS - 1;
    const minutes = candles("1m", day, end);
    const trades = minutes.reduce((n, k) => n + k.tradeCount, 0);
    const result: DayFiles = { symbol, date: dayName(day), trades, files: [] };
    if (trades === 0) return result;
    const write = async (kind: DailyKind, csv: string) => {
      const key = dailyKey(kind, symbol, day);
      const zip = await zipOne(csvName(key), new TextEncoder().encode(csv), new Date(day));
      const checksum = await checksumLine(zip, key.slice(key.lastIndexOf("/") + 1));
      await this.bucket.put(key, zip, ZIP_PUT);
      await this.bucket.put(`${key}.CHECKSUM`, checksum, { httpMetadata: { contentType: "text/plain; charset=utf-8" } });
      result.files.push({ key, bytes: zip.length, sha256: checksum.slice(0, 64) });
    };
    await write("klines/1m", klinesCsv(minutes));
    await write("klines/1h", klinesCsv(candles("1h", day, end)));
    await write("klines/1d", klinesCsv(candles("1d", day, end)));
    if (trades > MAX_DAY_TRADES) {
      result.skipped = `${trades} trades: more than ${MAX_DAY_TRADES} a day are not written in one run`;
      return result;
    }
    const dayTrades = await this.tradesBetween(market, day, end);
    // An imported day has candles but no trades: its klines files only.
    if (dayTrades.length === 0) return result;
    // Never a short file: the trades read must be the live trades the day's candles count.
    const imported = new Set(
      this.store.candles
        .storedMinutes(day, end)
        .filter((m) => m.imported)
        .map((m) => m.minute),
    );
    const live = minutes.reduce((n, k) => n + (imported.has(k.openTime) ? 0 : k.tradeCount), 0);
    if (dayTrades.length !== live) {
      result.skipped = `${dayTrades.length} trades read, ${live} counted by the day's candles: the trades files were not written`;
      return result;
    }
    await write("trades", tradesCsv(dayTrades));
    await write("aggTrades", aggTradesCsv(dayTrades));
    return result;
  }

  /**
   * Every trade of `from`…`to` in tradeId order: the archived ones from R2 (every chunk whose times
   * reach the day, however many: late trades spread a day over chunks of later days), the rest
   * from SQLite.
   */
  private async tradesBetween(market: MarketConfig, from: number, to: number): Promise<ArchivedTrade[]> {
    const bounds = { startTime: from, endTime: to };
    const archived = this.store.archivedThrough();
    const hot = this.store.tradePage({ ...bounds, limit: MAX_DAY_TRADES }, archived).map((t) => wireTrade(market, t));
    const out: ArchivedTrade[] = [];
    for (let next = 1; ; ) {
      const chunks = this.store.chunksFor({ ...bounds, fromId: next }, true, 64);
      for (const chunk of chunks) out.push(...(await this.readChunk(market, chunk, bounds)));
      if (chunks.length < 64) break;
      next = chunks.at(-1)!.lastSeq + 1;
    }
    return [...out, ...hot];
  }

  /** The trades of an archived chunk that `bounds` admit (the chunk is in R2 once it is indexed here). */
  private async readChunk(market: MarketConfig, chunk: ArchivedChunk, bounds: Omit<TradePage, "limit">): Promise<ArchivedTrade[]> {
    const object = await this.bucket.get(chunkKey(market.symbol, chunk.chunk));
    if (!object) throw new Error(`archive chunk ${chunk.chunk} of ${market.symbol} is missing`);
    // Chunks archived before they were gzipped are plain JSON.
    const text = object.httpMetadata?.contentEncoding === "gzip" ? await gunzipText(object.body) : await object.text();
    return withinPage(JSON.parse(text) as ArchivedTrade[], bounds);
  }
}
