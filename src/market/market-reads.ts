import { aggregateCandles, candleOf, type Kline, type KlineQuery } from "../domain/candles";
import { bucketSizeFor, DAY_MS, HOUR_MS, type KlineInterval, MINUTE_MS, nextOpenTime, nominalMs, openTimeOf, SECOND_MS } from "../domain/intervals";
import type { MarketQuestion } from "../domain/market-answer";
import { formatWindow, mergeBuckets, type WindowRecord, windowStats } from "../domain/rolling-window";
import type { StoredTrade, TradePage } from "../domain/trades";
import { type WireTrade, wireTrade } from "../domain/wire-trade";
import { KEEP_TRADES, type MarketHistory } from "../history/market-history";
import type { MarketStore } from "../writes/market-store";
import { bookTickerOf, checksumOf, lastTradeOf, type MarketState, tickerAt } from "./market-state";

/** An order book snapshot whose levels are already JSON text (see `orderBookText`). */
export interface OrderBookText {
  symbol: string;
  sequence: number;
  timestamp: number;
  /** CRC-32 of the best 25 levels a side at `sequence` (docs/streams.md#checksums). */
  checksum: number;
  /** `{"bids":[…],"asks":[…]}` */
  levels: string;
}

/**
 * Every read of one market (docs/api.md, docs/edge-reads.md), from its state in memory and its
 * store: the answers the edge copies take as text, the candles the streams and the daily files
 * use. Reads only: the market object writes, and hands this the state it holds.
 */
export class MarketReads {
  /** The book's levels as JSON text per depth, for the sequence they were made at. */
  private bookTexts: { sequence: number; byDepth: Map<number, string> } | undefined;

  constructor(
    private readonly store: MarketStore,
    private readonly history: MarketHistory,
  ) {}

  /**
   * The order book for `GET /api/orderbook`, its levels as JSON text (`{"bids":[…],"asks":[…]}`):
   * one string crosses the RPC boundary instead of up to 2,000 small arrays, and the text is
   * kept until the book changes, so repeated reads of an unchanged book cost nothing here.
   */
  private orderBookText(state: MarketState, depth: number, now: number): OrderBookText {
    const symbol = state.market.symbol;
    const sequence = state.book.sequence;
    if (this.bookTexts?.sequence !== sequence) this.bookTexts = { sequence, byDepth: new Map() };
    let levels = this.bookTexts.byDepth.get(depth);
    if (levels === undefined) {
      levels = JSON.stringify(state.book.levels(depth));
      if (this.bookTexts.byDepth.size < 32) this.bookTexts.byDepth.set(depth, levels);
    }
    return { symbol, sequence, timestamp: now, checksum: checksumOf(state), levels };
  }

  /** The newest `limit` trades, newest first; with any bound of `page`, that page in tradeId order. */
  private async trades(state: MarketState, limit: number, page: Omit<TradePage, "limit"> = {}): Promise<WireTrade[]> {
    const wire = (t: StoredTrade) => wireTrade(state.market, t);
    if (Object.values(page).some((bound) => bound !== undefined)) return this.history.tradePage(state.market, { ...page, limit });
    if (state.tradesCache?.version !== state.version) state.tradesCache = { version: state.version, trades: this.store.latestTrades(KEEP_TRADES).map(wire) };
    return state.tradesCache.trades.slice(0, limit);
  }

  /**
   * Candles from the coarsest stored buckets that fit the interval and offset (docs/history.md#layout):
   * a year of `1d` or `1w` reads 365 day rows, not 525,600 minutes. A candle asked with an
   * `endTime` inside it is whole (candles that open at or before `endTime`).
   */
  klines(state: MarketState, query: KlineQuery): Kline[] {
    const { interval } = query;
    const offset = query.offsetMs ?? 0;
    const from = query.startTime === undefined ? 0 : openTimeOf(query.startTime, interval, offset);
    const to = query.endTime === undefined ? Number.MAX_SAFE_INTEGER : nextOpenTime(openTimeOf(query.endTime, interval, offset), interval, offset) - 1;
    const order = query.startTime === undefined ? "DESC" : "ASC";
    const size = bucketSizeFor(interval, offset);
    if (size === MINUTE_MS && nominalMs(interval) > HOUR_MS) return this.tiledCandles(state, query, from, to, order);
    return aggregateCandles(this.store.candles.buckets(size, from, to, order), interval, state.market, query.limit, offset);
  }

  /**
   * Candles of 2 h and longer at an offset that is not whole hours (+05:30, +05:45): the hours
   * (or days) with trades say which candles to build, and each is built from minutes at its edges,
   * hours and days between — a year of `1M` at +05:30 reads ~365 day rows and ~150 a month, not
   * every minute of the market's life.
   */
  private tiledCandles(state: MarketState, query: KlineQuery, from: number, to: number, order: "ASC" | "DESC"): Kline[] {
    const { interval, limit } = query;
    const offset = query.offsetMs ?? 0;
    const probe = nominalMs(interval) >= DAY_MS ? DAY_MS : HOUR_MS;
    const sizes = probe === DAY_MS ? ([MINUTE_MS, HOUR_MS, DAY_MS] as const) : ([MINUTE_MS, HOUR_MS] as const);
    const candles: Kline[] = [];
    let last: number | undefined;
    for (const bucket of this.store.candles.buckets(probe, Math.floor(from / probe) * probe, to, order)) {
      // A probe bucket touches at most two candles (every candle is longer than a probe bucket).
      const touched = [openTimeOf(bucket.minute, interval, offset), openTimeOf(bucket.minute + probe - 1, interval, offset)];
      for (const open of order === "ASC" ? touched : touched.reverse()) {
        if (open < from || open > to || (last !== undefined && (order === "ASC" ? open <= last : open >= last))) continue;
        last = open;
        const close = nextOpenTime(open, interval, offset) - 1;
        const merged = mergeBuckets([...this.store.candles.tileBuckets(open, close, sizes)]);
        if (!merged) continue;
        candles.push(candleOf(merged, open, close, state.market));
        if (candles.length === limit) return order === "DESC" ? candles.reverse() : candles;
      }
    }
    return order === "DESC" ? candles.reverse() : candles;
  }

  /**
   * Statistics of the window `openTime`…`closeTime` (docs/history.md#rolling-windows), from the
   * minutes at its edges and the hours between; the last price is the market's as of `now`.
   */
  private window(state: MarketState, openTime: number, closeTime: number, now: number): WindowRecord {
    const buckets = [...this.store.candles.spanBuckets(openTime, Math.min(closeTime, now))];
    return formatWindow(state.market.symbol, windowStats(buckets, lastTradeOf(state), openTime), state.market, closeTime);
  }

  /** The answer's text, showing the market at `at` (the ticker's closeTime, the book's timestamp). */
  async answerOf(state: MarketState, question: MarketQuestion, at: number): Promise<string> {
    switch (question.kind) {
      case "ticker":
        return JSON.stringify(tickerAt(state, at));
      case "book": {
        const book = this.orderBookText(state, question.depth, at);
        return `{"symbol":${JSON.stringify(book.symbol)},"sequence":${book.sequence},"timestamp":${book.timestamp},"checksum":${book.checksum},${book.levels.slice(1)}`;
      }
      case "bookTicker":
        return JSON.stringify(bookTickerOf(state, at));
      case "trades":
        return JSON.stringify(await this.trades(state, question.limit, question.page));
      case "klines":
        return JSON.stringify(this.klines(state, question.query));
      case "window":
        return JSON.stringify(this.window(state, question.openTime, question.closeTime ?? at, at));
    }
  }

  /**
   * The candle of `interval` (at `offsetMs`) opening at `openTime`: up to a day from the minutes
   * in memory (the last ~25 h); a second, or anything longer than a day, from the stored buckets
   * that tile it (hours at the edges and days between at an offset): a few small reads.
   */
  candleAt(state: MarketState, openTime: number, interval: KlineInterval, offsetMs: number): Kline | undefined {
    const closeTime = nextOpenTime(openTime, interval, offsetMs) - 1;
    const size = bucketSizeFor(interval, offsetMs);
    const buckets =
      size === SECOND_MS || size === DAY_MS
        ? [...this.store.candles.buckets(size, openTime, closeTime, "ASC")]
        : nominalMs(interval) <= DAY_MS
          ? state.recentBuckets.filter((b) => b.minute >= openTime && b.minute <= closeTime)
          : [...this.store.candles.spanBuckets(openTime, closeTime, size, DAY_MS)];
    const merged = mergeBuckets(buckets);
    return merged && candleOf(merged, openTime, closeTime, state.market);
  }
}
