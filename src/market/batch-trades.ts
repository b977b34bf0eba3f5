import { DAY_MS } from "../domain/intervals";
import type { MinuteBucket } from "../domain/rolling-window";
import type { StoredTrade } from "../domain/trades";
import type { MarketStore } from "../writes/market-store";
import type { UnitTradeInput } from "./ingest-check";
import { type MarketState, rememberBucket } from "./market-state";

/** What a batch's trades did: those taken (numbered in order), the duplicates, the buckets they changed, the past days they reached. */
export interface TakenTrades {
  accepted: StoredTrade[];
  duplicates: number;
  changedBuckets: Map<number, MinuteBucket>;
  /** UTC days before `now`'s that took a trade (their files are written again). */
  lateDays: number[];
}

/**
 * The batch's trades not taken before (ids within their minute for 25 hours, or still hot, looked
 * up for the whole batch at once; a repeat within the batch is one too), numbered after
 * `tradeSeq`, staged into the candle buckets and their ids remembered; nothing is written (the
 * tick's commit writes them as one block: `staged-batches.ts`).
 */
export function takeTrades(store: MarketStore, trades: readonly UnitTradeInput[], tradeSeq: number, now: number): TakenTrades {
  const known = store.knownAmong(trades);
  const accepted: StoredTrade[] = [];
  const changedBuckets = new Map<number, MinuteBucket>();
  const changedDays = new Set<number>();
  let duplicates = 0;
  for (const trade of trades) {
    if (known.has(trade.id)) {
      duplicates += 1;
      continue;
    }
    known.add(trade.id);
    accepted.push({ ...trade, seq: tradeSeq + accepted.length + 1 });
    const { minute, day } = store.candles.stageTrade(trade);
    changedBuckets.set(minute.minute, minute);
    changedDays.add(day.minute);
  }
  store.rememberIds(accepted);
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return { accepted, duplicates, changedBuckets, lateDays: [...changedDays].filter((day) => day < today) };
}

/** What memory holds of the last trade and of the recent minutes. */
export function rememberTrades(state: MarketState, taken: TakenTrades, now: number): void {
  state.tradeSeq += taken.accepted.length;
  // The same rule as a bucket's close (a later or equal time wins), so price and quantity agree.
  let latestTime = state.lastTradeTime;
  for (const trade of taken.accepted) {
    if (trade.time < latestTime) continue;
    latestTime = trade.time;
    state.lastTradeQty = trade.quantity;
  }
  for (const bucket of taken.changedBuckets.values()) rememberBucket(state, bucket, now);
}
