/**
 * The Binance dialect's shapes, made from the service's own records (docs/binance.md#field-mapping).
 * Pure and rule-free: every number here is one the service already answered, renamed or
 * rearranged; the few Binance fields the service does not keep are named in the docs.
 */
import { PUBLIC_LIMIT } from "../access/rate-limit";
import { add, type Decimal, divide, formatDecimal, formatUnits, multiply, parseDecimal } from "../core/decimal";
import type { Kline } from "../domain/candles";
import type { MarketConfig, MarketStatus } from "../domain/market-config";
import type { TickerRecord, WindowRecord } from "../domain/rolling-window";
import type { WireTrade } from "../market/market-object";
import type { BookMessage } from "../streams/wire-book";

type Level = readonly [string, string];

/** The native book ticker (`GET /api/book-ticker`). */
export interface NativeBookTicker {
  symbol: string;
  bidPrice: string | null;
  bidQty: string | null;
  askPrice: string | null;
  askQty: string | null;
  sequence: number;
}

/** The native order book snapshot (`GET /api/orderbook`). */
export interface NativeBook {
  sequence: number;
  bids: Level[];
  asks: Level[];
}

/** Binance's status words: a halted market is `HALT`, a delisted one `BREAK`. */
const STATUS: Record<MarketStatus, string> = { TRADING: "TRADING", HALTED: "HALT", DELISTED: "BREAK" };

/** Trade ids of a window are not kept per window: Binance's "none" (docs/binance.md#what-differs). */
const NO_TRADE_ID = -1;

const zero = (scale: number) => formatUnits(0n, scale);

/** The request weight Binance clients pace by: here every request counts 1 against the address's limit (docs/limits.md). */
export const BINANCE_RATE_LIMITS = [
  { rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit: PUBLIC_LIMIT },
  { rateLimitType: "RAW_REQUESTS", interval: "SECOND", intervalNum: 1, limit: PUBLIC_LIMIT },
];

/** One market in `exchangeInfo`: status, assets, precisions and the trading rules as Binance's filters. */
export function exchangeSymbol(market: MarketConfig) {
  const { rules } = market;
  return {
    symbol: market.symbol,
    status: STATUS[market.status],
    baseAsset: market.base,
    baseAssetPrecision: market.quantityScale,
    quoteAsset: market.quote,
    quotePrecision: market.priceScale,
    quoteAssetPrecision: market.priceScale,
    baseCommissionPrecision: market.quantityScale,
    quoteCommissionPrecision: market.priceScale,
    orderTypes: ["LIMIT", "MARKET"],
    icebergAllowed: false,
    ocoAllowed: false,
    otoAllowed: false,
    quoteOrderQtyMarketAllowed: false,
    allowTrailingStop: false,
    cancelReplaceAllowed: false,
    isSpotTradingAllowed: market.status === "TRADING",
    isMarginTradingAllowed: false,
    filters: [
      // No upper price bound here: Binance's 0 disables a bound.
      { filterType: "PRICE_FILTER", minPrice: rules.tickSize, maxPrice: zero(market.priceScale), tickSize: rules.tickSize },
      { filterType: "LOT_SIZE", minQty: rules.minQty, maxQty: rules.maxQty, stepSize: rules.stepSize },
      // The notional rule applies to every trade at its own price: no average (avgPriceMins 0 = the last price).
      { filterType: "MIN_NOTIONAL", minNotional: rules.minNotional, applyToMarket: true, avgPriceMins: 0 },
    ],
    permissions: [],
    permissionSets: [["SPOT"]],
    defaultSelfTradePreventionMode: "NONE",
    allowedSelfTradePreventionModes: ["NONE"],
  };
}

export function exchangeInfo(markets: readonly MarketConfig[], serverTime: number) {
  return { timezone: "UTC", serverTime, rateLimits: BINANCE_RATE_LIMITS, exchangeFilters: [], symbols: markets.map(exchangeSymbol) };
}

/** Σ price × quantity / Σ quantity at the price scale, half away from zero; undefined without volume. */
function volumeWeighted(quoteVolume: Decimal, volume: Decimal, priceScale: number): string | undefined {
  return volume.units === 0n ? undefined : formatDecimal(divide(quoteVolume, volume, priceScale));
}

/** The 24 h ticker in its MINI form. */
export function miniTicker(t: TickerRecord) {
  return {
    symbol: t.symbol,
    openPrice: t.openPrice,
    highPrice: t.high24h,
    lowPrice: t.low24h,
    lastPrice: t.lastPrice,
    volume: t.volume24h,
    quoteVolume: t.quoteVolume24h,
    openTime: t.openTime,
    closeTime: t.closeTime,
    firstId: NO_TRADE_ID,
    lastId: NO_TRADE_ID,
    count: t.tradeCount24h,
  };
}

/** The 24 h ticker in `GET /api/v3/ticker/24hr`'s FULL form: the MINI one and the change, averages and the top of the book. */
export function fullTicker(t: TickerRecord, market: MarketConfig) {
  const price0 = zero(market.priceScale);
  const qty0 = zero(market.quantityScale);
  return {
    ...miniTicker(t),
    priceChange: t.change24h,
    priceChangePercent: t.changePercent24h,
    weightedAvgPrice: volumeWeighted(parseDecimal(t.quoteVolume24h), parseDecimal(t.volume24h), market.priceScale) ?? price0,
    prevClosePrice: price0,
    lastQty: t.lastQty,
    bidPrice: t.bestBid ?? price0,
    bidQty: t.bestBidQty ?? qty0,
    askPrice: t.bestAsk ?? price0,
    askQty: t.bestAskQty ?? qty0,
  };
}

/** A rolling window or trading day (`GET /api/v3/ticker`, `/ticker/tradingDay`) in its MINI or FULL form. */
export function windowTicker(w: WindowRecord, type: "FULL" | "MINI") {
  const mini = {
    symbol: w.symbol,
    openPrice: w.openPrice,
    highPrice: w.highPrice,
    lowPrice: w.lowPrice,
    lastPrice: w.lastPrice,
    volume: w.volume,
    quoteVolume: w.quoteVolume,
    openTime: w.openTime,
    closeTime: w.closeTime,
    firstId: NO_TRADE_ID,
    lastId: NO_TRADE_ID,
    count: w.tradeCount,
  };
  if (type === "MINI") return mini;
  const { symbol, ...rest } = mini;
  return { symbol, priceChange: w.priceChange, priceChangePercent: w.priceChangePercent, weightedAvgPrice: w.weightedAvgPrice, ...rest };
}

export function tickerPrice(t: TickerRecord) {
  return { symbol: t.symbol, price: t.lastPrice };
}

/** The top of the book; an empty side is 0, as Binance writes it. */
export function bookTicker(b: NativeBookTicker, market: MarketConfig) {
  const price0 = zero(market.priceScale);
  const qty0 = zero(market.quantityScale);
  return { symbol: b.symbol, bidPrice: b.bidPrice ?? price0, bidQty: b.bidQty ?? qty0, askPrice: b.askPrice ?? price0, askQty: b.askQty ?? qty0 };
}

export function depth(book: NativeBook) {
  return { lastUpdateId: book.sequence, bids: book.bids, asks: book.asks };
}

/** The taker's side says who made the market: a taker sell means the buyer was the maker. */
const buyerIsMaker = (t: WireTrade) => t.side === "sell";

export function trade(t: WireTrade) {
  const quoteQty = multiply(parseDecimal(t.price), parseDecimal(t.quantity));
  return {
    id: t.tradeId,
    price: t.price,
    qty: t.quantity,
    quoteQty: formatDecimal(quoteQty),
    time: t.time,
    isBuyerMaker: buyerIsMaker(t),
    isBestMatch: true,
  };
}

/** Each trade is its own aggregate: which trades one taker order filled is not known here (docs/binance.md#aggregate-trades). */
export function aggTrade(t: WireTrade) {
  return { a: t.tradeId, p: t.price, q: t.quantity, f: t.tradeId, l: t.tradeId, T: t.time, m: buyerIsMaker(t), M: true };
}

/** A candle as Binance's array row. */
export function klineRow(k: Kline) {
  return [k.openTime, k.open, k.high, k.low, k.close, k.volume, k.closeTime, k.quoteVolume, k.tradeCount, k.takerBuyVolume, k.takerBuyQuoteVolume, "0"];
}

/** Binance's current average price: volume-weighted over the given candles (the last five minutes). */
export function averagePrice(candles: readonly Kline[], fallback: string, market: MarketConfig, closeTime: number) {
  const sum = (field: "volume" | "quoteVolume") => candles.reduce((total, k) => add(total, parseDecimal(k[field])), { units: 0n, scale: 0 });
  return { mins: 5, price: volumeWeighted(sum("quoteVolume"), sum("volume"), market.priceScale) ?? fallback, closeTime };
}

// ——— stream payloads (docs/binance.md#streams) ———

export function tradeEvent(t: WireTrade, symbol: string, eventTime: number) {
  return { e: "trade", E: eventTime, s: symbol, t: t.tradeId, p: t.price, q: t.quantity, T: t.time, m: buyerIsMaker(t), M: true };
}

export function aggTradeEvent(t: WireTrade, symbol: string, eventTime: number) {
  return { e: "aggTrade", E: eventTime, s: symbol, ...aggTrade(t) };
}

/** The native kline stream's candle: the candle, its interval and whether it is closed. */
export interface StreamedKline extends Kline {
  interval: string;
  closed: boolean;
}

export function klineEvent(k: StreamedKline, symbol: string, eventTime: number) {
  return {
    e: "kline",
    E: eventTime,
    s: symbol,
    k: {
      t: k.openTime,
      T: k.closeTime,
      s: symbol,
      i: k.interval,
      f: NO_TRADE_ID,
      L: NO_TRADE_ID,
      o: k.open,
      c: k.close,
      h: k.high,
      l: k.low,
      v: k.volume,
      n: k.tradeCount,
      x: k.closed,
      q: k.quoteVolume,
      V: k.takerBuyVolume,
      Q: k.takerBuyQuoteVolume,
      B: "0",
    },
  };
}

export function miniTickerEvent(t: TickerRecord, eventTime: number) {
  return { e: "24hrMiniTicker", E: eventTime, s: t.symbol, c: t.lastPrice, o: t.openPrice, h: t.high24h, l: t.low24h, v: t.volume24h, q: t.quoteVolume24h };
}

export function tickerEvent(t: TickerRecord, market: MarketConfig, eventTime: number) {
  const f = fullTicker(t, market);
  return {
    e: "24hrTicker",
    E: eventTime,
    s: f.symbol,
    p: f.priceChange,
    P: f.priceChangePercent,
    w: f.weightedAvgPrice,
    x: f.prevClosePrice,
    c: f.lastPrice,
    Q: f.lastQty,
    b: f.bidPrice,
    B: f.bidQty,
    a: f.askPrice,
    A: f.askQty,
    o: f.openPrice,
    h: f.highPrice,
    l: f.lowPrice,
    v: f.volume,
    q: f.quoteVolume,
    O: f.openTime,
    C: f.closeTime,
    F: f.firstId,
    L: f.lastId,
    n: f.count,
  };
}

/** A rolling window's event (`@ticker_<1h|4h|1d>`, `!ticker_<window>@arr`): `1hTicker`, `4hTicker`, `1dTicker`. */
export function windowTickerEvent(w: WindowRecord, window: string, eventTime: number) {
  return {
    e: `${window}Ticker`,
    E: eventTime,
    s: w.symbol,
    p: w.priceChange,
    P: w.priceChangePercent,
    o: w.openPrice,
    h: w.highPrice,
    l: w.lowPrice,
    c: w.lastPrice,
    w: w.weightedAvgPrice,
    v: w.volume,
    q: w.quoteVolume,
    O: w.openTime,
    C: w.closeTime,
    F: NO_TRADE_ID,
    L: NO_TRADE_ID,
    n: w.tradeCount,
  };
}

/** The system status (`GET /api/status`'s `status`) as Binance's `sapi/v1/system/status`: only a maintenance is 1. */
export function systemStatus(status: { status: string }) {
  return status.status === "maintenance" ? { status: 1 as const, msg: "system maintenance" as const } : { status: 0 as const, msg: "normal" as const };
}

/** The native average price (`avgPrice.{SYMBOL}`) as Binance's `avgPrice` event. */
export function avgPriceEvent(a: { symbol: string; mins: number; price: string; lastTradeTime: number }, eventTime: number) {
  return { e: "avgPrice", E: eventTime, s: a.symbol, i: `${a.mins}m`, w: a.price, T: a.lastTradeTime };
}

export function bookTickerEvent(b: NativeBookTicker, market: MarketConfig) {
  const top = bookTicker(b, market);
  return { u: b.sequence, s: b.symbol, b: top.bidPrice, B: top.bidQty, a: top.askPrice, A: top.askQty };
}

/** A diff event covering book updates `U`…`u` (the native delta's `firstSequence`…`sequence`). */
export function depthUpdateEvent(symbol: string, first: number, last: number, bids: readonly Level[], asks: readonly Level[], eventTime: number) {
  return { e: "depthUpdate", E: eventTime, s: symbol, U: first, u: last, b: bids, a: asks };
}

/** A partial book (`@depth5`, `@depth10`, `@depth20`). */
export function partialDepthEvent(book: Pick<BookMessage, "sequence" | "bids" | "asks">) {
  return { lastUpdateId: book.sequence, bids: book.bids, asks: book.asks };
}
