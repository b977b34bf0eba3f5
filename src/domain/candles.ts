import { formatUnits } from "../core/decimal";
import { type KlineInterval, nextOpenTime, openTimeOf } from "./intervals";
import { type MinuteBucket, mergeBuckets, type Scales } from "./rolling-window";

export interface Kline {
  openTime: number;
  closeTime: number;
  open: string;
  high: string;
  low: string;
  close: string;
  volume: string;
  quoteVolume: string;
  tradeCount: number;
  takerBuyVolume: string;
  takerBuyQuoteVolume: string;
}

export interface KlineQuery {
  interval: KlineInterval;
  limit: number;
  startTime?: number;
  endTime?: number;
  /** The `timeZone` offset in ms that shifts the interval boundaries (0: UTC). */
  offsetMs?: number;
}

/** One bucket's totals as a candle between the given open and close times. */
export function candleOf(merged: Omit<MinuteBucket, "minute">, openTime: number, closeTime: number, scales: Scales): Kline {
  const quoteScale = scales.priceScale + scales.quantityScale;
  return {
    openTime,
    closeTime,
    open: formatUnits(merged.open, scales.priceScale),
    high: formatUnits(merged.high, scales.priceScale),
    low: formatUnits(merged.low, scales.priceScale),
    close: formatUnits(merged.close, scales.priceScale),
    volume: formatUnits(merged.volume, scales.quantityScale),
    quoteVolume: formatUnits(merged.quoteVolume, quoteScale),
    tradeCount: merged.count,
    takerBuyVolume: formatUnits(merged.takerBuyVolume, scales.quantityScale),
    takerBuyQuoteVolume: formatUnits(merged.takerBuyQuoteVolume, quoteScale),
  };
}

/**
 * Groups stored buckets (seconds, minutes, hours or days: each a whole part of one candle, see
 * `bucketSizeFor`) into candles of `interval` at `offsetMs`. `buckets` may come in either order;
 * the candles come out ascending by open time. Intervals without trades have no candle.
 * `limit` stops the walk early: with descending input that yields the newest candles.
 */
export function aggregateCandles(buckets: Iterable<MinuteBucket>, interval: KlineInterval, scales: Scales, limit = Infinity, offsetMs = 0): Kline[] {
  const groups: { openTime: number; buckets: MinuteBucket[] }[] = [];
  let current: MinuteBucket[] | undefined;
  let currentEnd = Number.NaN;
  let currentStart = Number.NaN;
  for (const bucket of buckets) {
    // Buckets of one candle come together: a new open time is needed only past its bounds.
    if (!(bucket.minute >= currentStart && bucket.minute < currentEnd)) {
      if (groups.length === limit) break;
      currentStart = openTimeOf(bucket.minute, interval, offsetMs);
      currentEnd = nextOpenTime(currentStart, interval, offsetMs);
      current = [];
      groups.push({ openTime: currentStart, buckets: current });
    }
    current!.push(bucket);
  }
  const candles = groups.map(({ openTime, buckets: group }) => {
    const ascending = group.length > 1 && group[0]!.minute > group[1]!.minute ? [...group].reverse() : group;
    return candleOf(mergeBuckets(ascending)!, openTime, nextOpenTime(openTime, interval, offsetMs) - 1, scales);
  });
  return candles.length > 1 && candles[0]!.openTime > candles[1]!.openTime ? candles.reverse() : candles;
}
