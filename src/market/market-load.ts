import { updateFingerprint } from "../domain/book-fingerprint";
import { MINUTE_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import { OrderBook } from "../domain/order-book";
import type { MarketMeta, MarketStore } from "../writes/market-store";
import { type MarketState, TRADE_RETENTION_MS } from "./market-state";

/**
 * A market's state in memory, rebuilt from its storage after a start (docs/design.md#the-write-path):
 * the book from the log's snapshot and the rows after it, the trades after the buckets' last write
 * staged again exactly as when they came (and their ids known again), the recent minutes for the
 * rolling windows, and the record's fields read back from the log and the blocks.
 */
export function restoreState(store: MarketStore, meta: MarketMeta, market: MarketConfig, now: number): MarketState {
  const book = new OrderBook(market.priceScale, market.quantityScale);
  const levels = store.book.read(store.bookPosition());
  const unwritten = store.tradesUnwritten(meta.bucketsThroughSeq, meta.heldFrom);
  // The open hours and days from the stored minutes first, then the trades after them over them.
  store.candles.restoreOpenRollups(meta.rollupsThrough);
  for (const trade of unwritten) store.candles.stageTrade(trade);
  store.rememberIds(unwritten);
  const recent = [
    ...levels.resends.kept,
    ...levels.resends.updates.map(
      ([type, sequence, bids, asks]) => [sequence, updateFingerprint(type === "s" ? "snapshot" : "delta", sequence, bids, asks)] as const,
    ),
  ];
  book.restore(meta.bookSequence, meta.bookUpdatedAt, levels.bids, levels.asks, meta.bookFingerprint, recent);
  const latest = store.candles.latestBucket();
  return {
    market,
    book,
    recentBuckets: [...store.candles.buckets(MINUTE_MS, now - TRADE_RETENTION_MS, Number.MAX_SAFE_INTEGER, "ASC")],
    lastTradePrice: latest?.close,
    lastTradeQty: latest ? (store.latestTradeQuantity() ?? 0n) : 0n,
    lastTradeTime: latest?.lastTradeTime ?? 0,
    tradeSeq: meta.tradeSeq,
    lastUpdateAt: meta.lastUpdateAt,
    dirtyDays: JSON.parse(meta.dirtyDays) as number[],
    version: 0,
  };
}
