import { divideRounded, formatUnits } from "../core/decimal";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "./intervals";
import type { TopOfBook } from "./order-book";

/** A trade in integer units at its market's scales. */
export interface UnitTrade {
  price: bigint;
  quantity: bigint;
  /** The taker's side: a taker buy counts in the taker-buy volumes. */
  side: "buy" | "sell";
  time: number;
}

/**
 * One minute of trades (or, stored apart, one second, hour or day of them: `minute` is then the
 * bucket's start). `open`/`close` follow trade *time*, not arrival, so late or
 * out-of-order trades land where they belong (`openTime`/`closeTime` of the trades break ties
 * by arrival: the first trade seen at a time opens, the last closes).
 */
export interface MinuteBucket {
  minute: number;
  open: bigint;
  high: bigint;
  low: bigint;
  close: bigint;
  firstTradeTime: number;
  lastTradeTime: number;
  volume: bigint;
  quoteVolume: bigint;
  /** Base and quote volume of the trades whose taker bought. */
  takerBuyVolume: bigint;
  takerBuyQuoteVolume: bigint;
  count: number;
}

export { DAY_MS, MINUTE_MS };

export function minuteOf(time: number): number {
  return Math.floor(time / MINUTE_MS) * MINUTE_MS;
}

/**
 * Folds one trade into its bucket, or starts the bucket at `start` (its minute by default; the
 * second, hour and day buckets of docs/history.md pass their own start).
 */
export function addToBucket(bucket: MinuteBucket | undefined, trade: UnitTrade, start = minuteOf(trade.time)): MinuteBucket {
  const notional = trade.price * trade.quantity;
  const buy = trade.side === "buy";
  if (!bucket) {
    return {
      minute: start,
      open: trade.price,
      high: trade.price,
      low: trade.price,
      close: trade.price,
      firstTradeTime: trade.time,
      lastTradeTime: trade.time,
      volume: trade.quantity,
      quoteVolume: notional,
      takerBuyVolume: buy ? trade.quantity : 0n,
      takerBuyQuoteVolume: buy ? notional : 0n,
      count: 1,
    };
  }
  const earlier = trade.time < bucket.firstTradeTime;
  const laterOrSame = trade.time >= bucket.lastTradeTime;
  return {
    minute: bucket.minute,
    open: earlier ? trade.price : bucket.open,
    high: trade.price > bucket.high ? trade.price : bucket.high,
    low: trade.price < bucket.low ? trade.price : bucket.low,
    close: laterOrSame ? trade.price : bucket.close,
    firstTradeTime: earlier ? trade.time : bucket.firstTradeTime,
    lastTradeTime: laterOrSame ? trade.time : bucket.lastTradeTime,
    volume: bucket.volume + trade.quantity,
    quoteVolume: bucket.quoteVolume + notional,
    takerBuyVolume: buy ? bucket.takerBuyVolume + trade.quantity : bucket.takerBuyVolume,
    takerBuyQuoteVolume: buy ? bucket.takerBuyQuoteVolume + notional : bucket.takerBuyQuoteVolume,
    count: bucket.count + 1,
  };
}

/** Merges consecutive buckets (sorted by minute) into one candle's totals. */
export function mergeBuckets(buckets: readonly MinuteBucket[]): Omit<MinuteBucket, "minute"> | undefined {
  const first = buckets[0];
  if (!first) return undefined;
  let { high, low, volume, quoteVolume, takerBuyVolume, takerBuyQuoteVolume, count } = first;
  for (let i = 1; i < buckets.length; i++) {
    const b = buckets[i]!;
    if (b.high > high) high = b.high;
    if (b.low < low) low = b.low;
    volume += b.volume;
    quoteVolume += b.quoteVolume;
    takerBuyVolume += b.takerBuyVolume;
    takerBuyQuoteVolume += b.takerBuyQuoteVolume;
    count += b.count;
  }
  const last = buckets[buckets.length - 1]!;
  return {
    open: first.open,
    high,
    low,
    close: last.close,
    firstTradeTime: first.firstTradeTime,
    lastTradeTime: last.lastTradeTime,
    volume,
    quoteVolume,
    takerBuyVolume,
    takerBuyQuoteVolume,
    count,
  };
}

/**
 * The window of docs/api.md: from the start of the current minute minus 24 h to now.
 * Aligning the start to a minute makes it exactly a union of minute buckets.
 */
export function windowOpenTime(now: number): number {
  return minuteOf(now) - DAY_MS;
}

export interface TickerStats {
  lastPrice: bigint;
  /** The quantity of the last trade (by trade time); 0 if never traded. */
  lastQty: bigint;
  openPrice: bigint;
  high: bigint;
  low: bigint;
  volume: bigint;
  quoteVolume: bigint;
  tradeCount: number;
  openTime: number;
}

/**
 * Statistics of the window from `openTime` on, from buckets sorted ascending (minutes, or any mix
 * that tiles the window) and the market's latest trade. Follows the documented edge cases: no
 * trade in the window but one before → open, high and low are the last price and volumes are
 * zero; never traded → all zero.
 */
export function windowStats(buckets: readonly MinuteBucket[], lastTrade: { price: bigint; quantity: bigint } | undefined, openTime: number): TickerStats {
  let start = buckets.length;
  while (start > 0 && buckets[start - 1]!.minute >= openTime) start -= 1;
  const merged = mergeBuckets(start === 0 ? buckets : buckets.slice(start));
  const lastPrice = lastTrade?.price ?? 0n;
  const lastQty = lastTrade?.quantity ?? 0n;
  if (!merged) {
    return { lastPrice, lastQty, openPrice: lastPrice, high: lastPrice, low: lastPrice, volume: 0n, quoteVolume: 0n, tradeCount: 0, openTime };
  }
  return {
    lastPrice,
    lastQty,
    openPrice: merged.open,
    high: merged.high,
    low: merged.low,
    volume: merged.volume,
    quoteVolume: merged.quoteVolume,
    tradeCount: merged.count,
    openTime,
  };
}

/** Rolling 24-hour statistics (docs/api.md): the window from the start of the current minute − 24 h. */
export function tickerStats(buckets: readonly MinuteBucket[], lastTrade: { price: bigint; quantity: bigint } | undefined, now: number): TickerStats {
  return windowStats(buckets, lastTrade, windowOpenTime(now));
}

/** The windows of `windowSize` (docs/history.md#rolling-windows): 1m–59m, 1h–23h, 1d–7d, one unit. */
const WINDOW_UNITS: Record<string, [ms: number, most: number]> = { m: [MINUTE_MS, 59], h: [HOUR_MS, 23], d: [DAY_MS, 7] };

/** A `windowSize` in ms, or undefined when it is not one (units are not combined: `1d2h` is not one). */
export function parseWindowSize(text: string): number | undefined {
  const match = /^([1-9]\d?)([mhd])$/.exec(text);
  if (!match) return undefined;
  const [unitMs, most] = WINDOW_UNITS[match[2]!]!;
  const amount = Number(match[1]);
  return amount <= most ? amount * unitMs : undefined;
}

/** Statistics of a window as the service answers them (`GET /api/window`, `GET /api/trading-day`). */
export interface WindowRecord {
  symbol: string;
  openTime: number;
  closeTime: number;
  openPrice: string;
  highPrice: string;
  lowPrice: string;
  lastPrice: string;
  priceChange: string;
  priceChangePercent: string;
  /** quoteVolume / volume at the price scale, half away from zero; 0 without volume. */
  weightedAvgPrice: string;
  volume: string;
  quoteVolume: string;
  tradeCount: number;
}

export function formatWindow(symbol: string, stats: TickerStats, scales: Scales, closeTime: number): WindowRecord {
  const price = (units: bigint) => formatUnits(units, scales.priceScale);
  return {
    symbol,
    openTime: stats.openTime,
    closeTime,
    openPrice: price(stats.openPrice),
    highPrice: price(stats.high),
    lowPrice: price(stats.low),
    lastPrice: price(stats.lastPrice),
    priceChange: price(stats.lastPrice - stats.openPrice),
    priceChangePercent: changePercent(stats.lastPrice, stats.openPrice),
    // Quote volume is at priceScale + quantityScale and volume at quantityScale: the quotient is at priceScale.
    weightedAvgPrice: price(stats.volume === 0n ? 0n : divideRounded(stats.quoteVolume, stats.volume)),
    volume: formatUnits(stats.volume, scales.quantityScale),
    quoteVolume: formatUnits(stats.quoteVolume, scales.priceScale + scales.quantityScale),
    tradeCount: stats.tradeCount,
  };
}

/** `change / open × 100` at 2 decimals, half away from zero; `"0.00"` when open is 0. */
export function changePercent(lastPrice: bigint, openPrice: bigint): string {
  if (openPrice === 0n) return "0.00";
  return formatUnits(divideRounded((lastPrice - openPrice) * 10_000n, openPrice), 2);
}

export interface TickerRecord {
  symbol: string;
  lastPrice: string;
  lastQty: string;
  openPrice: string;
  high24h: string;
  low24h: string;
  change24h: string;
  changePercent24h: string;
  volume24h: string;
  quoteVolume24h: string;
  tradeCount24h: number;
  openTime: number;
  closeTime: number;
  bestBid: string | null;
  bestBidQty: string | null;
  bestAsk: string | null;
  bestAskQty: string | null;
  /** When the market last took an update from its feed (null: never): set by the market, not here. */
  lastUpdateTime?: number | null;
}

export interface Scales {
  priceScale: number;
  quantityScale: number;
}

/** The wire form of the ticker record. Quote volume is exact at priceScale + quantityScale. */
export function formatTicker(symbol: string, stats: TickerStats, scales: Scales, closeTime: number, top: TopOfBook = {}): TickerRecord {
  const price = (units: bigint) => formatUnits(units, scales.priceScale);
  const quantity = (units: bigint) => formatUnits(units, scales.quantityScale);
  return {
    symbol,
    lastPrice: price(stats.lastPrice),
    lastQty: quantity(stats.lastQty),
    openPrice: price(stats.openPrice),
    high24h: price(stats.high),
    low24h: price(stats.low),
    change24h: price(stats.lastPrice - stats.openPrice),
    changePercent24h: changePercent(stats.lastPrice, stats.openPrice),
    volume24h: quantity(stats.volume),
    quoteVolume24h: formatUnits(stats.quoteVolume, scales.priceScale + scales.quantityScale),
    tradeCount24h: stats.tradeCount,
    openTime: stats.openTime,
    closeTime,
    bestBid: top.bid ? price(top.bid[0]) : null,
    bestBidQty: top.bid ? quantity(top.bid[1]) : null,
    bestAsk: top.ask ? price(top.ask[0]) : null,
    bestAskQty: top.ask ? quantity(top.ask[1]) : null,
  };
}
