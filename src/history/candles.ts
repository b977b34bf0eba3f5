import { formatUnits } from "../core/decimal";
import { type MinuteBucket, mergeBuckets, type Scales } from "./rolling-window";

export const KLINE_INTERVALS = {
  "1m": 60_000,
  "5m": 300_000,
  "15m": 900_000,
  "1h": 3_600_000,
  "4h": 14_400_000,
  "1d": 86_400_000,
} as const;

export type KlineInterval = keyof typeof KLINE_INTERVALS;

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
}

/** Start of the interval holding `time` (intervals are aligned to the Unix epoch, so 1d is UTC days). */
export function alignDown(time: number, intervalMs: number): number {
  return Math.floor(time / intervalMs) * intervalMs;
}

/**
 * Groups minute buckets into candles of `intervalMs`. `buckets` may come in either order;
 * the candles come out ascending by open time. Intervals without trades have no candle.
 * `limit` stops the walk early: with descending input that yields the newest candles.
 */
export function aggregateCandles(buckets: Iterable<MinuteBucket>, intervalMs: number, scales: Scales, limit = Infinity): Kline[] {
  const groups: MinuteBucket[][] = [];
  let current: MinuteBucket[] | undefined;
  let currentStart = Number.NaN;
  for (const bucket of buckets) {
    const start = alignDown(bucket.minute, intervalMs);
    if (start !== currentStart) {
      if (groups.length === limit) break;
      current = [];
      groups.push(current);
      currentStart = start;
    }
    current!.push(bucket);
  }
  const candles = groups.map((group) => {
    const ascending = group.length > 1 && group[0]!.minute > group[1]!.minute ? [...group].reverse() : group;
    const merged = mergeBuckets(ascending)!;
    const openTime = alignDown(ascending[0]!.minute, intervalMs);
    return {
      openTime,
      closeTime: openTime + intervalMs - 1,
      open: formatUnits(merged.open, scales.priceScale),
      high: formatUnits(merged.high, scales.priceScale),
      low: formatUnits(merged.low, scales.priceScale),
      close: formatUnits(merged.close, scales.priceScale),
      volume: formatUnits(merged.volume, scales.quantityScale),
      quoteVolume: formatUnits(merged.quoteVolume, scales.priceScale + scales.quantityScale),
      tradeCount: merged.count,
      takerBuyVolume: formatUnits(merged.takerBuyVolume, scales.quantityScale),
      takerBuyQuoteVolume: formatUnits(merged.takerBuyQuoteVolume, scales.priceScale + scales.quantityScale),
    };
  });
  return candles.length > 1 && candles[0]!.openTime > candles[1]!.openTime ? candles.reverse() : candles;
}
