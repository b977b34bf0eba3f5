import { createRoute, OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { Kline } from "../domain/candles";
import { isKlineInterval, KLINE_INTERVALS, parseTimeZone } from "../domain/intervals";
import type { MarketQuestion } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import { minuteOf, parseWindowSize, type TickerRecord, type WindowRecord } from "../domain/rolling-window";
import type { AppEnv } from "../http/env";
import type { AppRouter } from "../http/router";
import type { WireTrade } from "../market/market-object";
import { readVenue } from "../reads/edge-reads";
import { klinesQuestion, readContext, tradingDayQuestion, windowQuestion } from "../reads/reads";
import { currentRegistry } from "../registry/copy";
import { BinanceError, binanceError, handleBinanceError, illegalParameter } from "./errors";
import { binanceHook, marketOf, marketsAsked, onlyParams, rows } from "./params";
import { eachRecord, readOne, readRecords, readWindows, sendAs } from "./route-reads";
import {
  AggTradesQuery,
  BinanceAggTradeSchema,
  BinanceAvgPriceSchema,
  BinanceBookTickerSchema,
  BinanceDepthSchema,
  BinanceErrorSchema,
  BinanceKlineSchema,
  BinanceMiniTickerSchema,
  BinancePriceSchema,
  BinanceSystemStatusSchema,
  BinanceTickerSchema,
  BinanceTimeSchema,
  BinanceTradeSchema,
  BinanceWindowTickerSchema,
  DepthQuery,
  ExchangeInfoQuery,
  ExchangeInfoSchema,
  HistoricalTradesQuery,
  KlinesQuery,
  OptionalSymbolQuery,
  oneOrMany,
  SymbolQuery,
  TickerQuery,
  TradesQuery,
  TradingDayQuery,
  WindowTickerQuery,
} from "./schemas";
import { binanceStreamRoutes } from "./stream-routes";
import * as binance from "./translate";
import { WS_API_TICKER_SYMBOLS, wsApiRequests } from "./ws-api";
import { type App, binanceWsApiRoutes } from "./ws-api-routes";

const tags = ["Binance-compatible market data"];
/** The most levels a side `depth` answers: Binance's 5000, which a book here holds (MAX_LEVELS_PER_SIDE). */
const MAX_DEPTH = 5000;

const errors = {
  400: {
    description: "Binance error: -1100, -1101, -1102, -1104, -1120, -1121, -1122, -1128, -1130, -1220",
    content: { "application/json": { schema: BinanceErrorSchema } },
  },
  429: { description: "Binance error -1003, with Retry-After", content: { "application/json": { schema: BinanceErrorSchema } } },
};
const ok = <T extends z.ZodType>(schema: T, description: string) => ({ 200: { description, content: { "application/json": { schema } } } });

/** An empty futures `exchangeInfo`: CCXT asks for futures markets by default, and this venue has none. */
const noFutures = (c: Context<AppEnv>) =>
  c.json({ timezone: "UTC", serverTime: Date.now(), rateLimits: binance.BINANCE_RATE_LIMITS, exchangeFilters: [], assets: [], symbols: [] });
/** A Binance `GET /api/v3/{path}` behind the public limit and the parameter check (unknown parameters are Binance's -1101). */
function v3Get(limit: MiddlewareHandler<AppEnv>) {
  return <P extends string, R extends Omit<RouteConfig, "method" | "path" | "tags" | "middleware">>(path: P, config: R) =>
    createRoute({
      ...config,
      method: "get",
      path: `/api/v3/${path}` as `/api/v3/${P}`,
      tags,
      middleware: [limit, onlyParams(config.request?.query as z.ZodObject | undefined)] as const,
    });
}

type V3Get = ReturnType<typeof v3Get>;

/** Connectivity, time and the markets: answered from this isolate, no object call. */
function generalRoutes(router: AppRouter, get: V3Get): void {
  router.openapi(
    get("ping", { operationId: "binancePing", summary: "Test connectivity", responses: { ...ok(z.object({}), "An empty object"), ...errors } }),
    (c) => c.json({}, 200),
  );
  router.openapi(get("time", { operationId: "binanceTime", summary: "Server time", responses: { ...ok(BinanceTimeSchema, "Server time"), ...errors } }), (c) =>
    c.json({ serverTime: Date.now() }, 200),
  );
  router.openapi(
    get("exchangeInfo", {
      operationId: "binanceExchangeInfo",
      summary: "Markets with status, precisions and trading rules as filters",
      description: "From this isolate's registry copy: no object call. HALTED markets are HALT, DELISTED ones BREAK.",
      request: { query: ExchangeInfoQuery },
      responses: { ...ok(ExchangeInfoSchema, "Exchange information"), ...errors },
    }),
    (c) => {
      const query = c.req.valid("query");
      if (query.symbolStatus !== undefined && (query.symbol !== undefined || query.symbols !== undefined)) throw binanceError("INVALID_PARAMETER_COMBINATION");
      const asked = marketsAsked(query, Number.POSITIVE_INFINITY); // from the registry copy: no read at all
      const markets = asked.one ? [asked.one] : (asked.many ?? currentRegistry().snapshot.markets);
      return c.json(binance.exchangeInfo(markets, Date.now()) as z.infer<typeof ExchangeInfoSchema>, 200);
    },
  );
}

/** The book and the trades, recent and historical. */
function bookAndTradeRoutes(router: AppRouter, get: V3Get): void {
  router.openapi(
    get("depth", {
      operationId: "binanceDepth",
      summary: "Order book",
      description: "`lastUpdateId` is the book's sequence: the `U`/`u` of the depth streams continue it (docs/binance.md#a-local-order-book).",
      request: { query: DepthQuery },
      responses: { ...ok(BinanceDepthSchema, "Best levels first"), ...errors },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const read = await readOne(c, marketsAsked(query).one!, { kind: "book", depth: rows(query.limit, 100, MAX_DEPTH) });
      return sendAs<z.infer<typeof BinanceDepthSchema>>(c, read, binance.depth);
    },
  );
  router.openapi(
    get("trades", {
      operationId: "binanceTrades",
      summary: "Recent trades, oldest first",
      request: { query: TradesQuery },
      responses: { ...ok(z.array(BinanceTradeSchema), "Trades"), ...errors },
    }),
    async (c) => {
      const { symbol, limit } = c.req.valid("query");
      const read = await readOne(c, marketOf(symbol), { kind: "trades", limit: rows(limit, 500) });
      // The native answer is newest first; Binance lists the same trades oldest first.
      return sendAs<z.infer<typeof BinanceTradeSchema>[]>(c, read, (trades: WireTrade[]) => [...trades].reverse().map(binance.trade));
    },
  );
  router.openapi(
    get("historicalTrades", {
      operationId: "binanceHistoricalTrades",
      summary: "Older trades from a trade id (public here: no API key needed)",
      request: { query: HistoricalTradesQuery },
      responses: { ...ok(z.array(BinanceTradeSchema), "Trades, ascending id"), ...errors },
    }),
    async (c) => {
      const { symbol, limit, fromId } = c.req.valid("query");
      const n = rows(limit, 500);
      const question: MarketQuestion = fromId === undefined ? { kind: "trades", limit: n } : { kind: "trades", limit: n, page: { fromId } };
      const read = await readOne(c, marketOf(symbol), question);
      return sendAs<z.infer<typeof BinanceTradeSchema>[]>(c, read, (trades: WireTrade[]) => ascending(trades).map(binance.trade));
    },
  );
  router.openapi(
    get("aggTrades", {
      operationId: "binanceAggTrades",
      summary: "Aggregate trades (each trade is its own aggregate here)",
      description: "`a`, `f` and `l` are the trade id: which trades one taker order filled is not known here (docs/binance.md#aggregate-trades).",
      request: { query: AggTradesQuery },
      responses: { ...ok(z.array(BinanceAggTradeSchema), "Aggregate trades, ascending id"), ...errors },
    }),
    async (c) => {
      const { symbol, limit, fromId, startTime, endTime } = c.req.valid("query");
      if (fromId !== undefined && (startTime !== undefined || endTime !== undefined)) throw binanceError("INVALID_PARAMETER_COMBINATION");
      if (startTime !== undefined && endTime !== undefined && startTime > endTime) throw binanceError("INVALID_PARAMETER_COMBINATION");
      const page = { ...(fromId !== undefined && { fromId }), ...(startTime !== undefined && { startTime }), ...(endTime !== undefined && { endTime }) };
      const n = rows(limit, 500);
      const question: MarketQuestion = Object.keys(page).length > 0 ? { kind: "trades", limit: n, page } : { kind: "trades", limit: n };
      const read = await readOne(c, marketOf(symbol), question);
      return sendAs<z.infer<typeof BinanceAggTradeSchema>[]>(c, read, (trades: WireTrade[]) => ascending(trades).map(binance.aggTrade));
    },
  );
}

/** Candles and the five-minute average price. */
function candleRoutes(router: AppRouter, get: V3Get): void {
  for (const [path, operationId] of [
    ["klines", "binanceKlines"],
    ["uiKlines", "binanceUiKlines"],
  ] as const) {
    router.openapi(
      get(path, {
        operationId: operationId,
        summary: "Candles as array rows",
        description: `Intervals ${KLINE_INTERVALS.join(", ")}; intervals without trades have no row. uiKlines answers the same rows as klines.`,
        request: { query: KlinesQuery },
        responses: { ...ok(z.array(BinanceKlineSchema), "Candles, ascending open time"), ...errors },
      }),
      async (c) => {
        const { symbol, interval, startTime, endTime, timeZone, limit } = c.req.valid("query");
        if (!isKlineInterval(interval)) throw binanceError("BAD_INTERVAL");
        if (timeZone !== undefined && parseTimeZone(timeZone) === undefined) throw illegalParameter("timeZone", "-12:00 to +14:00, as 8, -5 or +05:45");
        if (startTime !== undefined && endTime !== undefined && startTime > endTime) throw binanceError("INVALID_PARAMETER_COMBINATION");
        const market = marketOf(symbol);
        const read = await readOne(
          c,
          market,
          klinesQuestion({
            interval,
            limit: rows(limit, 500),
            ...(startTime !== undefined && { startTime }),
            ...(endTime !== undefined && { endTime }),
            ...(timeZone !== undefined && { timeZone }),
          }),
        );
        return sendAs<z.infer<typeof BinanceKlineSchema>[]>(c, read, (candles: Kline[]) => candles.map(binance.klineRow));
      },
    );
  }
  router.openapi(
    get("avgPrice", {
      operationId: "binanceAvgPrice",
      summary: "Average price of the last five minutes",
      description: "Volume-weighted over the current minute and the four before it; the last price when none of them traded.",
      request: { query: SymbolQuery },
      responses: { ...ok(BinanceAvgPriceSchema, "Average price"), ...errors },
    }),
    async (c) => {
      const market = marketOf(c.req.valid("query").symbol);
      const now = Date.now();
      // Aligned to the minute, so every request of a minute shares one edge copy.
      const read = await readOne(c, market, { kind: "klines", query: { interval: "1m", limit: 5, startTime: minuteOf(now) - 4 * 60_000 } });
      const candles = JSON.parse(read.text) as Kline[];
      let fallback = "";
      if (candles.length === 0) fallback = (JSON.parse((await readOne(c, market, { kind: "ticker" })).text) as TickerRecord).lastPrice;
      return sendAs<z.infer<typeof BinanceAvgPriceSchema>>(c, read, () => binance.averagePrice(candles, fallback, market, now), true);
    },
  );
}

/** Windows of one shape: from a moment to now, for one or some markets. */
function windowRoutes(router: AppRouter, get: V3Get): void {
  for (const { path, operationId, summary, description, query: parameters, ok: answer, ask } of [
    {
      path: "ticker",
      operationId: "binanceWindowTicker",
      summary: "Rolling-window statistics: 1m–59m, 1h–23h, 1d–7d, for one or some markets",
      description:
        "`symbol` for one record, `symbols` (a JSON array) for an array; one of them is required. The window opens at the start of the current minute minus `windowSize` and closes now (docs/history.md#rolling-windows).",
      query: WindowTickerQuery,
      ok: "Window statistics",
      ask: (query: { windowSize?: string }, c: Context<AppEnv>) => {
        const windowMs = parseWindowSize(query.windowSize ?? "1d");
        if (windowMs === undefined) throw illegalParameter("windowSize", "1m-59m, 1h-23h or 1d-7d");
        // Binance's WebSocket API takes 200 symbols here, its REST endpoint 100.
        return { question: windowQuestion(windowMs, Date.now()), most: wsApiRequests.has(c.req.raw) ? WS_API_TICKER_SYMBOLS : undefined };
      },
    },
    {
      path: "ticker/tradingDay",
      operationId: "binanceTradingDay",
      summary: "Statistics of the current trading day at a UTC offset, for one or some markets",
      description: "`symbol` or `symbols` (required). From the day's midnight at `timeZone` (default UTC) to now; `closeTime` is the day's last millisecond.",
      query: TradingDayQuery,
      ok: "Trading-day statistics",
      ask: (query: { timeZone?: string }) => {
        const offset = parseTimeZone(query.timeZone ?? "0");
        if (offset === undefined) throw illegalParameter("timeZone", "-12:00 to +14:00, as 8, -5 or +05:45");
        return { question: tradingDayQuestion(offset, Date.now()), most: undefined };
      },
    },
  ] as const) {
    router.openapi(
      get(path, {
        operationId,
        summary,
        description,
        request: { query: parameters },
        responses: { ...ok(oneOrMany(z.union([BinanceWindowTickerSchema, BinanceMiniTickerSchema])), answer), ...errors },
      }),
      async (c) => {
        const query = c.req.valid("query");
        const { question, most } = ask(query, c);
        const read = await readWindows(c, query, question, most);
        return sendAs<z.infer<typeof BinanceWindowTickerSchema>>(
          c,
          read,
          eachRecord((w: WindowRecord) => binance.windowTicker(w, query.type)),
        );
      },
    );
  }
}

/** Every market's latest record of a kind, each translated alone. */
function recordRoutes(router: AppRouter, get: V3Get): void {
  for (const { path, operationId, summary, description, query: parameters, schema, ok: answer, kind, each } of [
    {
      path: "ticker/24hr",
      operationId: "binanceTicker24hr",
      summary: "24-hour rolling tickers: one, some or all",
      description:
        "`symbol` for one record; `symbols` (a JSON array) or nothing for an array. Every market at once is one object call per second at most, whatever the number of markets (docs/api.md#all-markets).",
      query: TickerQuery,
      schema: z.union([BinanceTickerSchema, BinanceMiniTickerSchema]),
      ok: "Ticker records",
      kind: "ticker",
      each: (query: Partial<z.infer<typeof TickerQuery>>, only?: readonly MarketConfig[]) =>
        eachRecord(query.type === "MINI" ? (t: TickerRecord) => binance.miniTicker(t) : binance.fullTicker, only),
    },
    {
      path: "ticker/price",
      operationId: "binanceTickerPrice",
      summary: "Last prices: one, some or all",
      description: undefined,
      query: OptionalSymbolQuery,
      schema: BinancePriceSchema,
      ok: "Prices",
      kind: "ticker",
      each: (_query: object, only?: readonly MarketConfig[]) => eachRecord(binance.tickerPrice, only),
    },
    {
      path: "ticker/bookTicker",
      operationId: "binanceBookTicker",
      summary: "Best bid and ask: one, some or all",
      description: undefined,
      query: OptionalSymbolQuery,
      schema: BinanceBookTickerSchema,
      ok: "Tops of the books",
      kind: "bookTicker",
      each: (_query: object, only?: readonly MarketConfig[]) => eachRecord(binance.bookTicker, only),
    },
  ] as const) {
    router.openapi(
      get(path, {
        operationId,
        summary,
        ...(description !== undefined && { description }),
        request: { query: parameters },
        responses: { ...ok(oneOrMany(schema), answer), ...errors },
      }),
      async (c) => {
        const query = c.req.valid("query");
        const asked = marketsAsked(query, Number.POSITIVE_INFINITY);
        return sendAs<z.infer<typeof schema>>(c, await readRecords(c, asked, kind), each(query, asked.many));
      },
    );
  }
}

/**
 * The Binance Spot market-data dialect, mounted at `/binance` (docs/binance.md): Binance's paths,
 * parameters, shapes and errors over the same reads, edge copies and limits as `/api`.
 *
 * @example
 * app.route("/binance", binanceRoutes(publicLimit, () => app));
 */
export function binanceRoutes(limit: MiddlewareHandler<AppEnv>, app: () => App) {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: binanceHook });
  router.onError(handleBinanceError);
  const get = v3Get(limit);
  generalRoutes(router, get);
  bookAndTradeRoutes(router, get);
  candleRoutes(router, get);
  windowRoutes(router, get);
  recordRoutes(router, get);
  router.openapi(
    createRoute({
      method: "get",
      path: "/sapi/v1/system/status",
      operationId: "binanceSystemStatus",
      tags,
      middleware: [limit] as const,
      summary: "System status: 0 normal, 1 system maintenance",
      description:
        "From GET /api/status: 1 while an announced maintenance runs (docs/operations.md#announcements), else 0 (a degraded venue is still 0, as Binance has no other value). CCXT's fetchStatus reads it with its sapi URL pointed here.",
      responses: { ...ok(BinanceSystemStatusSchema, "System status"), ...errors },
    }),
    async (c) => sendAs<z.infer<typeof BinanceSystemStatusSchema>>(c, await readVenue(readContext(c), "status"), binance.systemStatus),
  );
  binanceStreamRoutes(router, limit);
  binanceWsApiRoutes(router, limit, app);
  router.get("/fapi/v1/exchangeInfo", limit, noFutures);
  router.get("/dapi/v1/exchangeInfo", limit, noFutures);
  // Anything else under /binance (accounts, orders, other products) is not here: Binance's shape, not a problem+json.
  router.all("/*", limit, (c) => {
    throw new BinanceError(
      "UNSUPPORTED_OPERATION",
      `${c.req.method} ${c.req.path} is not part of this service's Binance dialect (market data only; docs/binance.md).`,
    );
  });
  return router;
}

/** Pages of the trade history are already ascending; the newest-first default is reversed. */
function ascending(trades: WireTrade[]): WireTrade[] {
  return trades.length > 1 && trades[0]!.tradeId > trades[1]!.tradeId ? [...trades].reverse() : trades;
}
