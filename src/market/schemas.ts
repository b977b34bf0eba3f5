import { z } from "@hono/zod-openapi";
import { SystemStatusFields } from "../announcements/schemas";
import { DecimalString, queryInt, queryIntOr, TimestampMs } from "../core/schemas";
import { KLINE_INTERVALS, parseTimeZone } from "../domain/intervals";
import { MAX_LEVELS_PER_SIDE } from "../domain/order-book";
import { parseWindowSize } from "../domain/rolling-window";

/** The `{pair}` path parameter: canonical or separated, any case (docs/api.md). */
export const PairParam = z.object({
  pair: z.string().openapi({ param: { name: "pair", in: "path" }, example: "BTCUSDT", description: "BTCUSDT, BTC-USDT, BTC_USDT or BTC%2FUSDT, any case" }),
});

export const Level = z.tuple([DecimalString, DecimalString]).openapi({ example: ["97000.10", "0.50000"], description: "[price, quantity]" });

export const OrderBookSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    sequence: z.number().int().openapi({ description: "Increases by 1 with every book update" }),
    timestamp: TimestampMs,
    time: TimestampMs.optional().openapi({ description: "With sequence= or at=: when the market applied the update at `sequence` (then also `timestamp`)" }),
    checksum: z.number().int().openapi({
      example: 4195112551,
      description: "CRC-32 of the best 25 levels a side at this sequence, as the book stream sends it (docs/streams.md#checksums)",
    }),
    bids: z.array(Level).openapi({ description: "Best (highest) first" }),
    asks: z.array(Level).openapi({ description: "Best (lowest) first" }),
  })
  .openapi("OrderBook");

/** A change in percent, as every ticker and window shows it. */
const ChangePercent = DecimalString.openapi({ example: "-1.23", description: "Percent, 2 decimals, half away from zero" });
/** A window's quote volume, as every ticker and window shows it. */
const QuoteVolume = DecimalString.openapi({ description: "Σ price × quantity, exact (priceScale + quantityScale decimals)" });

export const TickerSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    lastPrice: DecimalString,
    lastQty: DecimalString.openapi({ description: "Quantity of the last trade (the latest by trade time); 0 if never traded" }),
    openPrice: DecimalString,
    high24h: DecimalString,
    low24h: DecimalString,
    volume24h: DecimalString.openapi({ description: "Base-asset volume in the window" }),
    quoteVolume24h: QuoteVolume,
    tradeCount24h: z.number().int(),
    change24h: DecimalString.openapi({ description: "Absolute change in quote currency: lastPrice − openPrice" }),
    changePercent24h: ChangePercent,
    openTime: TimestampMs.openapi({ description: "Start of the current minute − 24 h" }),
    closeTime: TimestampMs.openapi({ description: "The moment the record shows: at most MARKET_READ_MAX_AGE_MS before the response (also in X-As-Of)" }),
    bestBid: DecimalString.nullable(),
    bestBidQty: DecimalString.nullable().openapi({ description: "Quantity at the best bid; null when the bid side is empty" }),
    bestAsk: DecimalString.nullable(),
    bestAskQty: DecimalString.nullable().openapi({ description: "Quantity at the best ask; null when the ask side is empty" }),
    lastUpdateTime: TimestampMs.nullable().openapi({
      description: "When the market last took an update (book or trade) from its feed; null if never. A feed gone silent shows here and in GET /api/status",
    }),
  })
  .openapi("Ticker");

/** `timeZone`: shifts the interval boundaries, never startTime/endTime (docs/history.md#intervals). */
const TimeZoneParam = z
  .string()
  .max(6)
  .refine((text) => parseTimeZone(text) !== undefined, { message: "a UTC offset from -12:00 to +14:00, as 8, -5, +05:45 or 0" })
  .optional()
  .openapi({ example: "+08:00", description: "UTC offset of the interval boundaries, -12:00 to +14:00 (8, -5, +05:45); default 0 (UTC)" });

export const WindowSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    openTime: TimestampMs.openapi({ description: "Start of the window: a minute boundary (rolling) or the trading day's midnight" }),
    closeTime: TimestampMs.openapi({ description: "End of the window: the moment shown (rolling), or the trading day's last millisecond" }),
    openPrice: DecimalString,
    highPrice: DecimalString,
    lowPrice: DecimalString,
    lastPrice: DecimalString,
    priceChange: DecimalString.openapi({ description: "lastPrice − openPrice" }),
    priceChangePercent: ChangePercent,
    weightedAvgPrice: DecimalString.openapi({ description: "quoteVolume / volume at the price scale; 0 without volume" }),
    volume: DecimalString,
    quoteVolume: QuoteVolume,
    tradeCount: z.number().int(),
  })
  .openapi("WindowStats");

export const AveragePriceSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    mins: z.literal(5).openapi({ description: "The window: the current minute and the four before it" }),
    price: DecimalString.openapi({ description: "quoteVolume / volume of the five minutes at the price scale; the last price when none of them traded" }),
    closeTime: TimestampMs.openapi({ description: "The moment shown" }),
    lastTradeTime: TimestampMs,
  })
  .openapi("AveragePrice");

export const WindowQuery = z.object({
  windowSize: z
    .string()
    .max(3)
    .refine((text) => parseWindowSize(text) !== undefined, { message: "1m–59m, 1h–23h or 1d–7d, one unit" })
    .default("1d")
    .openapi({ example: "4h", description: "1m–59m, 1h–23h or 1d–7d (one unit); default 1d" }),
});

export const TradingDayQuery = z.object({ timeZone: TimeZoneParam });

export const BookTickerSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    bidPrice: DecimalString.nullable().openapi({ description: "Best bid; null when the bid side is empty" }),
    bidQty: DecimalString.nullable(),
    askPrice: DecimalString.nullable().openapi({ description: "Best ask; null when the ask side is empty" }),
    askQty: DecimalString.nullable(),
    sequence: z.number().int().openapi({ description: "The book sequence these levels belong to" }),
    timestamp: TimestampMs.openapi({ description: "The moment shown (also in X-As-Of)" }),
  })
  .openapi("BookTicker");

/** `symbols=A,B`: markets in the order written; none → every market that is not delisted. */
export const SymbolsQuery = z.object({
  symbols: z
    .string()
    .max(1024)
    .optional()
    .openapi({ example: "BTCUSDT,ETHUSDT", description: "Comma-separated symbols (any accepted spelling), answered in this order; omit for every market" }),
});

export const TradeSchema = z
  .object({
    tradeId: z.number().int().openapi({ example: 1042, description: "Per market, rising by 1 in the order the market applied its trades" }),
    id: z.string().openapi({ description: "The publisher's id" }),
    price: DecimalString,
    quantity: DecimalString,
    side: z.enum(["buy", "sell"]).openapi({ description: "The taker's side" }),
    time: TimestampMs,
  })
  .openapi("Trade");

export const KlineSchema = z
  .object({
    openTime: TimestampMs,
    closeTime: TimestampMs,
    open: DecimalString,
    high: DecimalString,
    low: DecimalString,
    close: DecimalString,
    volume: DecimalString,
    quoteVolume: DecimalString,
    tradeCount: z.number().int(),
    takerBuyVolume: DecimalString.openapi({ description: "Base volume of the trades whose taker bought" }),
    takerBuyQuoteVolume: DecimalString.openapi({ description: "Quote volume of those trades, exact (priceScale + quantityScale decimals)" }),
  })
  .openapi("Kline");

export const MarketSchema = z
  .object({
    symbol: z.string().openapi({ example: "BTCUSDT" }),
    base: z.string().openapi({ example: "BTC" }),
    quote: z.string().openapi({ example: "USDT" }),
    status: z.enum(["TRADING", "HALTED", "DELISTED"]),
    priceScale: z.number().int(),
    quantityScale: z.number().int(),
    tickSize: DecimalString.openapi({ example: "0.01", description: "Prices are multiples of it" }),
    stepSize: DecimalString.openapi({ example: "0.00001", description: "Quantities are multiples of it" }),
    minQty: DecimalString.openapi({ example: "0.00001" }),
    maxQty: DecimalString.openapi({ example: "1000" }),
    minNotional: DecimalString.openapi({ example: "0.10", description: "Least price × quantity of a trade, in the quote asset" }),
  })
  .openapi("Market");

/** A market in `GET /api/markets`: its listing, and when its feed last updated it. */
const ListedMarketSchema = MarketSchema.extend({
  lastUpdateTime: TimestampMs.nullable().openapi({ description: "When the market last took an update from its feed (null: never); at most about 1 s behind" }),
}).openapi("ListedMarket");

/** The feeds' health, as the price index counts it. */
export const FeedStatusSchema = z
  .object({
    serverTime: TimestampMs,
    staleAfterMs: z.number().int().openapi({ description: "A trading market with no update for longer than this is stale (FEED_STALE_AFTER_MS)" }),
    trading: z.number().int().openapi({ description: "Markets trading (stale ones included)" }),
    halted: z.number().int(),
    stale: z.number().int().openapi({ description: "Trading markets whose feed has been silent longer than staleAfterMs, or never spoke" }),
    staleMarkets: z.array(z.string()).openapi({ example: ["XRPUSDT"] }),
    haltedMarkets: z.array(z.string()),
  })
  .openapi("FeedStatus");

/** `GET /api/status` and the `status` stream: the system status and announcements with the feeds' health. */
export const StatusSchema = FeedStatusSchema.extend(SystemStatusFields).openapi("Status");

const RateLimitSchema = z
  .object({
    scope: z.enum(["ip", "apiKey", "gateway"]).openapi({ description: "Who the limit counts: client address, API key or settlement gateway" }),
    kind: z.enum(["requests", "connections"]),
    limit: z.number().int(),
    windowMs: z.number().int().nullable().openapi({ description: "Rolling window for requests; null for concurrent connections" }),
    appliesTo: z.string().openapi({ example: "/api/*, /account/*" }),
  })
  .openapi("RateLimit");

export const AssetSchema = z
  .object({ asset: z.string(), name: z.string(), decimals: z.number().int(), status: z.enum(["ACTIVE", "INACTIVE"]) })
  .openapi("Asset");

export const MarketsSchema = z
  .object({
    markets: z.array(ListedMarketSchema),
    assets: z.array(AssetSchema),
    rateLimits: z.array(RateLimitSchema).openapi({ description: "The service's limits, so clients can pace themselves (docs/limits.md)" }),
  })
  .openapi("Markets");

const PriceSchema = z
  .object({
    asset: z.string().openapi({ example: "SOL" }),
    name: z.string().openapi({ example: "Solana" }),
    decimals: z.number().int(),
    price: DecimalString,
    changePercent24h: DecimalString,
    source: z.string().openapi({ example: "SOLBTC×BTCUSDT", description: "The pair, or the route through one bridge asset" }),
    updatedAt: TimestampMs,
  })
  .openapi("Price");

export const PricesSchema = z
  .object({
    quote: z.string().openapi({ example: "USDT" }),
    asOf: TimestampMs.nullable().openapi({ description: "Time of the cached snapshot; null before the first one" }),
    data: z.array(PriceSchema),
  })
  .openapi("Prices");

export const ServerTimeSchema = z.object({ serverTime: TimestampMs }).openapi("ServerTime");

const AssetCode = z.string().regex(/^[A-Za-z0-9]{1,16}$/, "must be an asset code such as BTC");

export const PricesQuery = z.object({
  assets: z
    .string()
    .max(512)
    .optional()
    .openapi({ example: "BTC,ETH", description: "Comma-separated asset codes; all active assets when absent" })
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      const codes = value.split(",").map((code) => code.trim());
      for (const code of codes) {
        if (!AssetCode.safeParse(code).success) {
          ctx.addIssue({ code: "custom", message: `"${code.slice(0, 20)}" is not an asset code` });
          return z.NEVER;
        }
      }
      return codes.map((code) => code.toUpperCase());
    }),
  quote: AssetCode.optional()
    .openapi({ example: "USDT", description: "Quote asset, default USDT" })
    .transform((v) => (v ?? "USDT").toUpperCase()),
});

export const DepthQuery = z.object({
  depth: queryIntOr(1, 1000, 100).openapi({ example: 100, description: "Levels per side, 1–1000, default 100" }),
});

/** `GET /api/orderbook/{pair}`: the live book, or as it stood at a sequence or a moment (docs/history.md#book-history). */
export const BookQuery = DepthQuery.extend({
  sequence: queryInt(0, Number.MAX_SAFE_INTEGER).openapi({
    description: "The book as it stood at this sequence (after the last update at or before it); immutable, cached by the sequence",
  }),
  at: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: the book as it stood then (after the last batch applied at or before it)" }),
}).refine((q) => q.sequence === undefined || q.at === undefined, { message: "send sequence or at, not both", path: ["at"] });

const TradeId = (description: string) => queryInt(1, Number.MAX_SAFE_INTEGER).openapi({ description });

export const TradesQueryFields = z.object({
  limit: queryIntOr(1, 1000, 100).openapi({ example: 100, description: "1–1000, default 100" }),
  fromId: TradeId("Page forwards: trades with tradeId ≥ fromId, ascending"),
  before: TradeId("Page backwards: the `limit` trades just before this tradeId, ascending"),
  startTime: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: trades at or after it, ascending" }),
  endTime: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: trades at or before it, ascending" }),
});

/** fromId and before page in opposite directions: one or the other. */
export function tradePageRules<T extends z.ZodType<{ fromId?: number; before?: number; startTime?: number; endTime?: number }>>(schema: T) {
  return forwardTimeRange(schema).refine((q) => q.fromId === undefined || q.before === undefined, {
    message: "send fromId or before, not both",
    path: ["before"],
  });
}

export const KlinesQueryFields = z.object({
  interval: z
    .enum(KLINE_INTERVALS)
    .default("1m")
    .openapi({ description: `${KLINE_INTERVALS.join(" ")}, default 1m (docs/history.md#intervals)` }),
  limit: queryIntOr(1, 1000, 500).openapi({ example: 500, description: "1–1000, default 500" }),
  startTime: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: candles that end at or after it" }),
  endTime: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: candles that start at or before it" }),
  timeZone: TimeZoneParam,
});

/** Adds the rule that a time range runs forwards (kept apart so the fields can be extended). */
export function forwardTimeRange<T extends z.ZodType<{ startTime?: number; endTime?: number }>>(schema: T) {
  return schema.refine((q) => q.startTime === undefined || q.endTime === undefined || q.startTime <= q.endTime, {
    message: "startTime must not be after endTime",
    path: ["startTime"],
  });
}

export const KlinesQuery = forwardTimeRange(KlinesQueryFields);
export const TradesQuery = tradePageRules(TradesQueryFields);

/** Book updates one ingest batch may carry (docs/publishing.md#batches). */
export const MAX_BOOK_UPDATES_PER_BATCH = 1000;
/** Trades one ingest batch may carry. */
export const MAX_TRADES_PER_BATCH = 1000;
/** The longest symbol, trade id or batch id a publisher may send. */
export const MAX_ID_CHARS = 64;

const BookUpdateSchema = z
  .object({
    type: z.enum(["snapshot", "delta"]),
    sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    bids: z.array(Level).max(MAX_LEVELS_PER_SIDE),
    asks: z.array(Level).max(MAX_LEVELS_PER_SIDE),
  })
  .openapi("BookUpdate");

/** The body of `POST /v1/ingest` (docs/publishing.md). */
export const IngestBodySchema = z
  .object({
    symbol: z.string().min(1).max(MAX_ID_CHARS),
    trades: z
      .array(
        z.object({
          id: z.string().min(1).max(MAX_ID_CHARS),
          price: DecimalString,
          quantity: DecimalString,
          side: z.enum(["buy", "sell"]),
          time: TimestampMs,
        }),
      )
      .max(MAX_TRADES_PER_BATCH)
      .optional(),
    book: z
      .union([BookUpdateSchema, z.array(BookUpdateSchema).min(1).max(MAX_BOOK_UPDATES_PER_BATCH)])
      .optional()
      .openapi({
        description: `One book update, or up to ${MAX_BOOK_UPDATES_PER_BATCH} in sequence order, applied in order, all or nothing (docs/publishing.md#batches)`,
      }),
  })
  .openapi("IngestRequest");

export type IngestBody = z.infer<typeof IngestBodySchema>;

export const IngestResultSchema = z
  .object({
    symbol: z.string(),
    acceptedTrades: z.number().int(),
    duplicateTrades: z.number().int(),
    sequence: z.number().int().openapi({ description: "The book's sequence after this batch" }),
    book: z
      .enum(["applied", "duplicate"])
      .optional()
      .openapi({ description: "With a book update: applied, or duplicate — an identical replay of the last applied update, which changes nothing" }),
  })
  .openapi("IngestResult");
