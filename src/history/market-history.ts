import { gzipText } from "../core/encoding";
import { DAY_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import type { ArchivedChunk, StoredTrade, TradePage } from "../domain/trades";
import { pageRunsForwards } from "../domain/trades";
import { type WireTrade, wireTrade } from "../domain/wire-trade";
import type { MarketStore } from "../writes/market-store";
import { readChunk } from "./chunk-reads";
import type { DayPage } from "./daily-files";
import { type ArchivedTrade, chunkKey, chunkSize, MAX_CHUNK_READS } from "./trade-archive";

/**
 * Hot trades beyond 25 hours' worth are archived anyway past this count: about 200 MB of rows
 * and indexes, a fiftieth of an object's 10 GB (docs/capacity.md#history-a-year-of-one-busy-market-and-of-a-venue).
 */
const HOT_MOST_TRADES = 1_000_000;
/** A page of a day's hot blocks for the daily files' Workflow: about this much of their text (a block is at most 1.2 MB), copied, not parsed. */
const DAY_PAGE_BYTES = 1_000_000;
/** The newest trades stay in SQLite whatever their age: the latest-trades answer reads them. */
export const KEEP_TRADES = 1000;

/**
 * A market's history beyond its hot rows (docs/history.md): the trade archive in R2, the pages
 * that read it with SQLite as one list, and a day's pages for the daily files' Workflow. Part of the market object, which
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
   * A page of one UTC day's trades for the daily files' Workflow (docs/history.md#daily-files), by
   * trade id from `fromId` through `throughSeq`: the archived chunks that may hold some (up to
   * MAX_CHUNK_READS; the Workflow reads them from R2 itself), or else the hot blocks that may, as
   * stored — about DAY_PAGE_BYTES of their text, never parsed here (the Workflow unpacks and
   * filters them). `next` is where the next page starts; past `throughSeq`, the day is read. One
   * index read or a few rows copied on the host's thread, whatever the day's size.
   */
  dayPage(day: number, fromId: number, throughSeq: number): DayPage {
    const bounds = { startTime: day, endTime: day + DAY_MS - 1, fromId, before: throughSeq + 1 };
    const archived = Math.min(this.store.archivedThrough(), throughSeq);
    if (fromId <= archived) {
      const chunks = this.store.chunksFor(bounds, true, MAX_CHUNK_READS);
      const next = chunks.length === MAX_CHUNK_READS ? chunks.at(-1)!.lastSeq + 1 : archived + 1;
      return { chunks: chunks.map((c) => c.chunk), blocks: [], open: [], next };
    }
    const { texts, open, through } = this.store.blocks.rawBlocks(Math.max(fromId, archived + 1), throughSeq, bounds.startTime, bounds.endTime, DAY_PAGE_BYTES);
    return { chunks: [], blocks: texts, open, next: through + 1 };
  }

  /** The trades of an archived chunk that `bounds` admit (the chunk is in R2 once it is indexed here). */
  private readChunk(market: MarketConfig, chunk: ArchivedChunk, bounds: Omit<TradePage, "limit">): Promise<ArchivedTrade[]> {
    return readChunk(this.bucket, market.symbol, chunk.chunk, bounds);
  }
}
