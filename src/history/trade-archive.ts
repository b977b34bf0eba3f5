/**
 * Trades past the hot window, in R2 (docs/history.md#trades): a market's trades in chunks of
 * `size` consecutive trade ids, one immutable object each, written once by the market and read
 * by the pages of `/api/trades`, `historicalTrades` and `aggTrades`. Pure: keys, chunk bounds
 * and the page rules; the market object does the I/O.
 */

import { intSetting } from "../core/settings";
import type { TradePage } from "../domain/trades";
import type { WireTrade } from "../domain/wire-trade";

/** Trades a chunk holds; `TRADE_ARCHIVE_CHUNK` overrides it (the tests use small chunks). */
const DEFAULT_CHUNK_TRADES = 10_000;
/** Chunks one page may read: a page is at most 1,000 trades, so more means its filter skipped most. */
export const MAX_CHUNK_READS = 8;

/** A trade as a chunk holds it: the wire form clients see. */
export type ArchivedTrade = WireTrade;

export function chunkSize(setting: string | undefined): number {
  return intSetting(setting, 10, 1_000_000, DEFAULT_CHUNK_TRADES);
}

/** `archive/trades/BTCUSDT/000000000042.json`: sorted by name, they are sorted by trade id. */
export function chunkKey(symbol: string, chunk: number): string {
  return `archive/trades/${symbol}/${String(chunk).padStart(12, "0")}.json`;
}

/** The trades of a chunk that the page's bounds admit, in trade id order. */
export function withinPage(trades: readonly ArchivedTrade[], page: Omit<TradePage, "limit">): ArchivedTrade[] {
  return trades.filter(
    (t) =>
      (page.fromId === undefined || t.tradeId >= page.fromId) &&
      (page.before === undefined || t.tradeId < page.before) &&
      (page.startTime === undefined || t.time >= page.startTime) &&
      (page.endTime === undefined || t.time <= page.endTime),
  );
}
