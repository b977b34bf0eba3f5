import type { z } from "@hono/zod-openapi";
import type { MarketConfig } from "../domain/market-config";
import type { OrderBook } from "../domain/order-book";
import {
  DAY_MS,
  formatTicker,
  formatWindow,
  MINUTE_MS,
  type MinuteBucket,
  minuteOf,
  parseWindowSize,
  type TickerRecord,
  type TickerStats,
  tickerStats,
  type WindowRecord,
  windowStats,
} from "../domain/rolling-window";
import type { WireTrade } from "../domain/wire-trade";
import { TICKER_WINDOWS, type TickerWindow } from "../streams/protocol";
import type { AveragePriceSchema, BookTickerSchema } from "./schemas";

/** Best bid and ask with quantities at one book sequence (the shape is the schema's). */
export type BookTicker = z.infer<typeof BookTickerSchema>;

/** Trade ids are remembered this long for de-duplication of publisher retries; the minutes in memory cover it. */
export const TRADE_RETENTION_MS = DAY_MS + 3_600_000;

/** What one market holds in memory; storage is the source it is rebuilt from (src/market/market-object.ts). */
export interface MarketState {
  /** The newest config this market has been given (scales, rules, status): from the registry. */
  market: MarketConfig;
  book: OrderBook;
  /** Buckets of the last ~25 h, ascending by minute: all the ticker window can need. */
  recentBuckets: MinuteBucket[];
  lastTradePrice: bigint | undefined;
  /** The quantity of that last trade (the latest by time, the last applied among equal times). */
  lastTradeQty: bigint;
  lastTradeTime: number;
  tradeSeq: number;
  /** When an ingest batch last changed the market (0: never): the ticker's `lastUpdateTime`. */
  lastUpdateAt: number;
  /** Past UTC days that took a late trade since their files' Workflow opened them: handed on again (docs/history.md#daily-files). */
  dirtyDays: number[];
  /** Bumped by every applied batch; keys the caches below. */
  version: number;
  tickerCache?: { version: number; minute: number; bookSequence: number; stats: TickerStats; record: TickerRecord };
  tradesCache?: { version: number; trades: WireTrade[] };
  /** The book's checksum for the sequence it was taken at: the stream and REST share it. */
  checksumAt?: { sequence: number; value: number };
}

/** The market's last trade, as the windows take it (undefined before its first). */
export function lastTradeOf(state: MarketState): { price: bigint; quantity: bigint } | undefined {
  return state.lastTradePrice === undefined ? undefined : { price: state.lastTradePrice, quantity: state.lastTradeQty };
}

/** Keeps the in-memory minutes in order and the last price current. */
export function rememberBucket(state: MarketState, bucket: MinuteBucket, now: number): void {
  if (bucket.lastTradeTime >= state.lastTradeTime) {
    state.lastTradeTime = bucket.lastTradeTime;
    state.lastTradePrice = bucket.close;
  }
  if (bucket.minute < now - TRADE_RETENTION_MS) return;
  const recent = state.recentBuckets;
  let i = recent.length;
  while (i > 0 && recent[i - 1]!.minute > bucket.minute) i -= 1;
  if (i > 0 && recent[i - 1]!.minute === bucket.minute) recent[i - 1] = bucket;
  else recent.splice(i, 0, bucket);
}

/**
 * The ticker changes only when a batch is applied or the window moves to the next minute,
 * so it is computed once per (batch, minute) and only `closeTime` is set per read.
 */
export function tickerOf(state: MarketState, now: number): { stats: TickerStats; record: TickerRecord } {
  const minute = minuteOf(now);
  const cached = state.tickerCache;
  if (cached && cached.version === state.version && cached.minute === minute && cached.bookSequence === state.book.sequence) return cached;
  const stats = tickerStats(state.recentBuckets, lastTradeOf(state), now);
  const record = formatTicker(state.market.symbol, stats, state.market, now, state.book.top());
  state.tickerCache = { version: state.version, minute, bookSequence: state.book.sequence, stats, record };
  return state.tickerCache;
}

/** The ticker record at `now` (`GET /api/ticker`, `ticker.{SYMBOL}`). */
export function tickerAt(state: MarketState, now: number): TickerRecord {
  return { ...tickerOf(state, now).record, closeTime: now, lastUpdateTime: state.lastUpdateAt || null };
}

/**
 * The streamed rolling windows (`ticker.{SYMBOL}.{window}`, docs/streams.md), from the minutes in
 * memory: each opens at the start of the current minute minus its size, as `GET /api/window`'s.
 * The 1d window is the ticker's own, so it costs nothing more.
 */
export function windowRecordsOf(state: MarketState, now: number): Record<TickerWindow, WindowRecord> {
  const records = {} as Record<TickerWindow, WindowRecord>;
  for (const window of TICKER_WINDOWS) {
    const stats = window === "1d" ? tickerOf(state, now).stats : windowStats(state.recentBuckets, lastTradeOf(state), minuteOf(now) - parseWindowSize(window)!);
    records[window] = formatWindow(state.market.symbol, stats, state.market, now);
  }
  return records;
}

/** The average price of `avgPrice.{SYMBOL}`: over the current minute and the four before it. */
export type AveragePrice = z.infer<typeof AveragePriceSchema>;

/** The average price at `now`, or undefined before the market's first trade. */
export function averagePriceOf(state: MarketState, now: number): AveragePrice | undefined {
  if (state.lastTradePrice === undefined) return undefined;
  const stats = windowStats(state.recentBuckets, lastTradeOf(state), minuteOf(now) - 4 * MINUTE_MS);
  const record = formatWindow(state.market.symbol, stats, state.market, now);
  const price = stats.volume > 0n ? record.weightedAvgPrice : record.lastPrice;
  return { symbol: state.market.symbol, mins: 5, price, closeTime: now, lastTradeTime: state.lastTradeTime };
}

/** The checksum of the book as it is now (docs/streams.md#checksums), once per sequence. */
export function checksumOf(state: MarketState): number {
  const { sequence } = state.book;
  if (state.checksumAt?.sequence !== sequence) {
    state.checksumAt = { sequence, value: state.book.checksum() };
  }
  return state.checksumAt.value;
}

/** The best bid and ask with their quantities (`GET /api/book-ticker`); null for an empty side. */
export function bookTickerOf(state: MarketState, now: number): BookTicker {
  const { bids, asks } = state.book.levels(1);
  const [bid, ask] = [bids[0], asks[0]];
  return {
    symbol: state.market.symbol,
    bidPrice: bid?.[0] ?? null,
    bidQty: bid?.[1] ?? null,
    askPrice: ask?.[0] ?? null,
    askQty: ask?.[1] ?? null,
    sequence: state.book.sequence,
    timestamp: now,
  };
}

/** The whole book as a `book.{SYMBOL}` snapshot (a shard's base; a publisher's snapshot passed on). */
export function snapshotMessageOf(state: MarketState) {
  return {
    type: "snapshot" as const,
    sequence: state.book.sequence,
    time: state.book.updatedAt,
    checksum: checksumOf(state),
    ...state.book.levels(Number.MAX_SAFE_INTEGER),
  };
}
