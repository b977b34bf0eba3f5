import { z } from "@hono/zod-openapi";
import { KLINE_INTERVALS } from "../domain/intervals";

/**
 * The Binance dialect's parameters and answers (docs/binance.md). Parameters are read as Binance
 * reads them: a missing one is -1102, a malformed one -1100 with its legal form (the message of
 * each rule below is that form), an unknown symbol -1121, an interval not kept here -1120.
 */

export const BINANCE_SYMBOL = /^[A-Z0-9-_.]{1,20}$/;
const SYMBOL_RULE = "^[A-Z0-9-_.]{1,20}$";
const INTEGER_RULE = "^[0-9]{1,20}$";
export const SYMBOLS_RULE = '^\\[("[A-Z0-9-_.]{1,20}"(,"[A-Z0-9-_.]{1,20}"){0,}){0,1}\\]$';

const SymbolParam = z
  .string()
  .regex(BINANCE_SYMBOL, SYMBOL_RULE)
  .openapi({ example: "BTCUSDT", description: "As Binance writes it: upper case, no separator" });
const Integer = (description: string) =>
  z
    .string()
    .regex(/^[0-9]{1,20}$/, INTEGER_RULE)
    .transform(Number)
    .optional()
    .openapi({ type: "integer", description });
const Symbols = z.string().optional().openapi({
  example: '["BTCUSDT","ETHUSDT"]',
  description:
    "A JSON array of symbols (URL-encoded); not with `symbol`. Every listed market may be named where the answer comes from the all-market one (ticker/24hr, ticker/price, ticker/bookTicker, exchangeInfo; at most 32 KiB of text), else at most 100",
});

const SymbolStatus = z
  .enum(["TRADING", "HALT", "BREAK"])
  .optional()
  .openapi({ description: "Only markets in this status: with `symbol`, -1220 when it is not; with `symbols` or neither, the others are left out" });

export const SymbolQuery = z.object({ symbol: SymbolParam });
export const OptionalSymbolQuery = z.object({ symbol: SymbolParam.optional(), symbols: Symbols, symbolStatus: SymbolStatus });
export const TickerQuery = OptionalSymbolQuery.extend({
  type: z.enum(["FULL", "MINI"]).default("FULL").openapi({ description: "FULL (default) or MINI" }),
});
export const WindowTickerQuery = TickerQuery.extend({
  windowSize: z.string().optional().openapi({ example: "4h", description: "1m–59m, 1h–23h or 1d–7d (one unit); default 1d" }),
});
export const TradingDayQuery = TickerQuery.extend({
  timeZone: z.string().optional().openapi({ example: "+08:00", description: "The day's UTC offset, -12:00 to +14:00 (8, -5, +05:45); default 0" }),
});
export const ExchangeInfoQuery = OptionalSymbolQuery.extend({
  permissions: z.string().optional().openapi({ description: "Accepted and ignored: every market here is SPOT" }),
  showPermissionSets: z.string().optional().openapi({ description: "Accepted and ignored" }),
  symbolStatus: SymbolStatus.openapi({ description: "Only markets in this status; not with `symbol` or `symbols` (-1128)" }),
});
export const DepthQuery = SymbolQuery.extend({
  symbolStatus: SymbolStatus,
  limit: Integer("Levels a side: default 100, at most 5000 as on Binance (a larger limit gets 5000)"),
});
export const TradesQuery = SymbolQuery.extend({ limit: Integer("Default 500, at most 1000 (a larger limit gets 1000)") });
export const HistoricalTradesQuery = TradesQuery.extend({ fromId: Integer("The trade id to start from; without it the most recent trades") });
export const AggTradesQuery = HistoricalTradesQuery.extend({
  startTime: Integer("Unix ms: trades at or after it"),
  endTime: Integer("Unix ms: trades at or before it"),
});
export const KlinesQuery = SymbolQuery.extend({
  interval: z.string().openapi({ example: "1m", description: `One of ${KLINE_INTERVALS.join(", ")}` }),
  startTime: Integer("Unix ms: candles from the one holding it"),
  endTime: Integer("Unix ms: candles up to the one holding it"),
  timeZone: z
    .string()
    .optional()
    .openapi({ description: "Shifts the interval boundaries (not startTime/endTime): -12:00 to +14:00, as 8, -5 or +05:45; default 0" }),
  limit: Integer("Default 500, at most 1000 (a larger limit gets 1000)"),
});

const Decimal = z.string().openapi({ example: "97000.10" });
const Level = z.tuple([Decimal, Decimal]).openapi({ description: "[price, quantity]" });

export const BinanceErrorSchema = z
  .object({ code: z.number().int().openapi({ example: -1121 }), msg: z.string().openapi({ example: "Invalid symbol." }) })
  .openapi("BinanceError", { description: "Binance's error shape (docs/binance.md#errors)" });

export const BinanceTimeSchema = z.object({ serverTime: z.number().int() }).openapi("BinanceServerTime");

const Filter = z
  .object({ filterType: z.enum(["PRICE_FILTER", "LOT_SIZE", "MIN_NOTIONAL"]) })
  .catchall(z.unknown())
  .openapi("BinanceFilter", { description: "PRICE_FILTER (minPrice, maxPrice 0 = none, tickSize), LOT_SIZE (minQty, maxQty, stepSize), MIN_NOTIONAL" });

const BinanceRateLimitSchema = z
  .object({ rateLimitType: z.string(), interval: z.string(), intervalNum: z.number().int(), limit: z.number().int() })
  .openapi("BinanceRateLimit");

const ExchangeSymbolSchema = z
  .object({
    symbol: z.string(),
    status: z.enum(["TRADING", "HALT", "BREAK"]),
    baseAsset: z.string(),
    baseAssetPrecision: z.number().int(),
    quoteAsset: z.string(),
    quotePrecision: z.number().int(),
    quoteAssetPrecision: z.number().int(),
    baseCommissionPrecision: z.number().int(),
    quoteCommissionPrecision: z.number().int(),
    orderTypes: z.array(z.string()),
    icebergAllowed: z.boolean(),
    ocoAllowed: z.boolean(),
    otoAllowed: z.boolean(),
    quoteOrderQtyMarketAllowed: z.boolean(),
    allowTrailingStop: z.boolean(),
    cancelReplaceAllowed: z.boolean(),
    isSpotTradingAllowed: z.boolean(),
    isMarginTradingAllowed: z.boolean(),
    filters: z.array(Filter),
    permissions: z.array(z.string()),
    permissionSets: z.array(z.array(z.string())),
    defaultSelfTradePreventionMode: z.string(),
    allowedSelfTradePreventionModes: z.array(z.string()),
  })
  .openapi("BinanceSymbol");

export const ExchangeInfoSchema = z
  .object({
    timezone: z.literal("UTC"),
    serverTime: z.number().int(),
    rateLimits: z.array(BinanceRateLimitSchema),
    exchangeFilters: z.array(z.unknown()),
    symbols: z.array(ExchangeSymbolSchema),
  })
  .openapi("BinanceExchangeInfo");

export const BinanceDepthSchema = z
  .object({ lastUpdateId: z.number().int().openapi({ description: "The book's sequence" }), bids: z.array(Level), asks: z.array(Level) })
  .openapi("BinanceDepth");

export const BinanceTradeSchema = z
  .object({
    id: z.number().int(),
    price: Decimal,
    qty: Decimal,
    quoteQty: Decimal,
    time: z.number().int(),
    isBuyerMaker: z.boolean(),
    isBestMatch: z.boolean(),
  })
  .openapi("BinanceTrade");

export const BinanceAggTradeSchema = z
  .object({
    a: z.number().int().openapi({ description: "Aggregate trade id: the trade's id here" }),
    p: Decimal.openapi({ description: "Price" }),
    q: Decimal.openapi({ description: "Quantity" }),
    f: z.number().int().openapi({ description: "First trade id of the aggregate (= a)" }),
    l: z.number().int().openapi({ description: "Last trade id of the aggregate (= a)" }),
    T: z.number().int().openapi({ description: "Trade time, Unix ms" }),
    m: z.boolean().openapi({ description: "The buyer was the maker" }),
    M: z.boolean().openapi({ description: "Best price match (always true)" }),
  })
  .openapi("BinanceAggTrade");

export const BinanceKlineSchema = z
  .tuple([z.number().int(), Decimal, Decimal, Decimal, Decimal, Decimal, z.number().int(), Decimal, z.number().int(), Decimal, Decimal, z.string()])
  .openapi("BinanceKline", {
    description: "[openTime, open, high, low, close, volume, closeTime, quoteVolume, trades, takerBuyBaseVolume, takerBuyQuoteVolume, unused]",
  });

export const BinanceSystemStatusSchema = z
  .object({
    status: z.union([z.literal(0), z.literal(1)]).openapi({ description: "0 normal, 1 system maintenance" }),
    msg: z.enum(["normal", "system maintenance"]),
  })
  .openapi("BinanceSystemStatus");

export const BinanceAvgPriceSchema = z.object({ mins: z.number().int(), price: Decimal, closeTime: z.number().int() }).openapi("BinanceAvgPrice");

export const BinanceMiniTickerSchema = z
  .object({
    symbol: z.string(),
    openPrice: Decimal,
    highPrice: Decimal,
    lowPrice: Decimal,
    lastPrice: Decimal,
    volume: Decimal,
    quoteVolume: Decimal,
    openTime: z.number().int(),
    closeTime: z.number().int(),
    firstId: z.number().int().openapi({ description: "-1 here (not kept per window)" }),
    lastId: z.number().int().openapi({ description: "-1 here (not kept per window)" }),
    count: z.number().int(),
  })
  .openapi("BinanceMiniTicker");

/** The rolling-window and trading-day ticker in its FULL form (MINI is `BinanceMiniTickerSchema`). */
export const BinanceWindowTickerSchema = BinanceMiniTickerSchema.extend({
  priceChange: Decimal,
  priceChangePercent: Decimal,
  weightedAvgPrice: Decimal,
}).openapi("BinanceWindowTicker");

export const BinanceTickerSchema = BinanceMiniTickerSchema.extend({
  priceChange: Decimal,
  priceChangePercent: Decimal,
  weightedAvgPrice: Decimal,
  prevClosePrice: Decimal.openapi({ description: "0 here (not kept)" }),
  lastQty: Decimal,
  bidPrice: Decimal,
  bidQty: Decimal,
  askPrice: Decimal,
  askQty: Decimal,
}).openapi("BinanceTicker");

export const BinancePriceSchema = z.object({ symbol: z.string(), price: Decimal }).openapi("BinancePrice");

export const BinanceBookTickerSchema = z
  .object({ symbol: z.string(), bidPrice: Decimal, bidQty: Decimal, askPrice: Decimal, askQty: Decimal })
  .openapi("BinanceBookTicker");

/** One record for `symbol`, an array otherwise. */
export const oneOrMany = <T extends z.ZodType>(schema: T) => z.union([schema, z.array(schema)]);
