import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler, TypedResponse } from "hono";
import { okJson, problemResponses } from "../core/schemas";
import { parseTimeZone } from "../domain/intervals";
import type { MarketQuestion } from "../domain/market-answer";
import { parseWindowSize } from "../domain/rolling-window";
import { readBookAt } from "../history/book-routes";
import type { AppEnv } from "../http/env";
import { type AppRouter, createRouter, routesOf } from "../http/router";
import {
  BookQuery,
  BookTickerSchema,
  KlineSchema,
  KlinesQuery,
  MarketsSchema,
  OrderBookSchema,
  PairParam,
  PricesQuery,
  PricesSchema,
  ServerTimeSchema,
  StatusSchema,
  SymbolsQuery,
  TickerSchema,
  TradeSchema,
  TradesQuery,
  TradingDayQuery,
  WindowQuery,
  WindowSchema,
} from "../market/schemas";
import { readVenue } from "./edge-reads";
import {
  klinesQuestion,
  readContext,
  readMany,
  readMarkets,
  readPair,
  readPrices,
  sendRead,
  tradesQuestion,
  tradingDayQuestion,
  windowQuestion,
} from "./reads";

const tags = ["Public market data"];

/** The query of a read that takes none. */
const NoQuery = z.object({});

/** A read of the market the path's `pair` names, its question made from the query (typed here, where its query is known). */
function byPair<Q extends z.ZodType<object>, S extends z.ZodType>(read: {
  path: string;
  operationId: string;
  summary: string;
  description: string;
  query: Q;
  question: (query: z.infer<Q>) => MarketQuestion;
  schema: S;
  ok: string;
}) {
  return { ...read, question: read.question as (query: object) => MarketQuestion };
}

type Route = ReturnType<typeof routesOf>;

/** Many markets' latest records of one kind: those `symbols` names, in its order, or every market. */
const MANY_READS = [
  {
    path: "/ticker",
    operationId: "listTickers",
    summary: "24-hour tickers of many markets in one call",
    description:
      "The markets `symbols` names, in its order, or every market that is not delisted. One request against the rate limit, whatever the number of markets. Unknown symbols: 404 UNKNOWN_SYMBOL naming them all (`symbols` in the problem).",
    kind: "ticker",
    schema: z.array(TickerSchema),
    ok: "Ticker records, in the order asked",
  },
  {
    path: "/book-ticker",
    operationId: "listBookTickers",
    summary: "Best bid and ask of many markets in one call",
    description: "As `GET /api/ticker` with `symbols`: in the order asked, or every market; one request against the rate limit.",
    kind: "bookTicker",
    schema: z.array(BookTickerSchema),
    ok: "Tops of the books, in the order asked",
  },
] as const;

/** One market's reads of one shape: the market the path names, the question its query makes. */
const PAIR_READS = [
  byPair({
    path: "/ticker/{pair}",
    operationId: "getTicker",
    summary: "24-hour rolling ticker",
    description: "The window runs from the start of the current minute − 24 h to the response time. Same record as the signed `GET /v1/ticker/24hr?symbol=`.",
    query: NoQuery,
    question: () => ({ kind: "ticker" }),
    schema: TickerSchema,
    ok: "Ticker record",
  }),
  byPair({
    path: "/book-ticker/{pair}",
    operationId: "getBookTicker",
    summary: "Best bid and ask with their quantities",
    description: "The live book's best level a side at `sequence`; an empty side is `null`.",
    query: NoQuery,
    question: () => ({ kind: "bookTicker" }),
    schema: BookTickerSchema,
    ok: "Top of the book",
  }),
  byPair({
    path: "/trades/{pair}",
    operationId: "listTrades",
    summary: "Latest trades, newest first; or a page of the trade history",
    description:
      "Without a bound: the newest `limit`, newest first. With `fromId`: from that tradeId forwards; with `before`: the `limit` trades just before it; with `startTime`/`endTime`: within those times (the first `limit` from `startTime`, else the last up to `endTime`) — pages in ascending tradeId. Pages reach every trade the market ever stored: older ones come from its archive in R2 (docs/history.md#trades).",
    query: TradesQuery,
    question: tradesQuestion,
    schema: z.array(TradeSchema),
    ok: "Trades",
  }),
  byPair({
    path: "/klines/{pair}",
    operationId: "listKlines",
    summary: "Candles in every interval, over the market's whole history",
    description:
      "Ascending by open time; intervals without trades have no candle. Without `startTime`, the newest `limit` candles (up to `endTime`); with it, the first `limit` from there. Candles of a minute and longer are kept for the life of the market, `1s` candles for 25 hours (docs/history.md).",
    query: KlinesQuery,
    question: klinesQuestion,
    schema: z.array(KlineSchema),
    ok: "Candles",
  }),
  byPair({
    path: "/window/{pair}",
    operationId: "getWindowStats",
    summary: "Statistics of a rolling window: 1m–59m, 1h–23h, 1d–7d",
    description:
      "From the start of the current minute back `windowSize`, to now: the window is up to 59,999 ms wider than asked, and every request of a minute shares one copy (docs/history.md#rolling-windows).",
    query: WindowQuery,
    question: ({ windowSize }) => windowQuestion(parseWindowSize(windowSize)!, Date.now()),
    schema: WindowSchema,
    ok: "Window statistics",
  }),
  byPair({
    path: "/trading-day/{pair}",
    operationId: "getTradingDay",
    summary: "Statistics of the current trading day, at a UTC offset",
    description: "From the day's midnight at `timeZone` (default UTC) to now; `closeTime` is the day's last millisecond (docs/history.md#rolling-windows).",
    query: TradingDayQuery,
    question: ({ timeZone }) => tradingDayQuestion(parseTimeZone(timeZone ?? "0")!, Date.now()),
    schema: WindowSchema,
    ok: "Trading-day statistics",
  }),
];

/** `GET /api/ticker` and `/api/book-ticker`: MANY_READS. */
function manyReadRoutes(router: AppRouter, route: Route): void {
  for (const { path, operationId, summary, description, kind, schema, ok } of MANY_READS) {
    router.openapi(
      route("get", path, {
        operationId,
        summary,
        description,
        request: { query: SymbolsQuery },
        responses: { ...okJson(schema, ok), ...problemResponses(400, 404, 429) },
      }),
      async (c) => sendRead<z.infer<typeof schema>>(c, await readMany(readContext(c), c.req.valid("query").symbols, { kind })),
    );
  }
}

/** `GET /api/{kind}/{pair}`: PAIR_READS. */
function pairReadRoutes(router: AppRouter, route: Route): void {
  for (const { path, operationId, summary, description, query, question, schema, ok } of PAIR_READS) {
    router.openapi(
      route("get", path, {
        operationId,
        summary,
        description,
        request: { params: PairParam, query },
        responses: { ...okJson(schema, ok), ...problemResponses(400, 404, 429) },
      }),
      async (c) => sendRead<z.infer<typeof schema>>(c, await readPair(readContext(c), c.req.valid("param").pair, question(c.req.valid("query")))),
    );
  }
}

/**
 * Public market data, mounted at `/api`; `limit` stands in front of every route.
 *
 * @example
 * app.route("/api", marketRoutes(publicLimit));
 */
export function marketRoutes(limit: MiddlewareHandler<AppEnv>) {
  const route = routesOf({ tags, middleware: [limit] });
  const router = createRouter();
  router
    .openapi(
      route("get", "/prices", {
        operationId: "getPrices",
        summary: "Current prices of active assets",
        description: "From the KV price cache (at most one write a second; other locations may lag up to ~60 s). `asOf` is the snapshot time.",
        request: { query: PricesQuery },
        responses: { ...okJson(PricesSchema, "Prices in the quote asset"), ...problemResponses(400, 429) },
      }),
      async (c) => sendRead<z.infer<typeof PricesSchema>>(c, await readPrices(readContext(c), c.req.valid("query"))),
    )
    .openapi(
      route("get", "/orderbook/{pair}", {
        operationId: "getOrderBook",
        summary: "Order book snapshot, now or at a past sequence or moment",
        description:
          "Without `sequence` or `at`: the live book. With one: the book exactly as it stood then, from the market's book history (docs/history.md#book-history); before the history begins, 404 naming its first sequence and time.",
        request: { params: PairParam, query: BookQuery },
        responses: { ...okJson(OrderBookSchema, "Up to `depth` levels a side, best first"), ...problemResponses(400, 404, 429) },
      }),
      async (c) => {
        const { depth, sequence, at } = c.req.valid("query");
        const { pair } = c.req.valid("param");
        if (sequence !== undefined || at !== undefined)
          return readBookAt(c, pair, sequence !== undefined ? { sequence } : { time: at! }, depth) as unknown as Response &
            TypedResponse<z.infer<typeof OrderBookSchema>, 200, "json">;
        return sendRead<z.infer<typeof OrderBookSchema>>(c, await readPair(readContext(c), pair, { kind: "book", depth }));
      },
    );
  manyReadRoutes(router, route);
  pairReadRoutes(router, route);
  router
    .openapi(
      route("get", "/markets", {
        operationId: "listMarkets",
        summary: "All markets with status and scales, and the assets",
        responses: { ...okJson(MarketsSchema, "Markets and assets"), ...problemResponses(429) },
      }),
      async (c) => sendRead<z.infer<typeof MarketsSchema>>(c, await readMarkets(readContext(c))),
    )
    .openapi(
      route("get", "/status", {
        operationId: "getStatus",
        summary: "Feed health: markets trading, halted and stale, and the server time",
        description:
          "A trading market is stale when its feed has sent no update for longer than `staleAfterMs` (or none since it was listed). From the price index's aggregated view, at most about 1 s behind the markets plus the copy's max age (docs/api.md#feed-health).",
        responses: { ...okJson(StatusSchema, "Status"), ...problemResponses(429) },
      }),
      async (c) => sendRead<z.infer<typeof StatusSchema>>(c, await readVenue(readContext(c), "status")),
    )
    .openapi(
      route("get", "/time", {
        operationId: "getServerTime",
        summary: "Server time, for clients that sign requests",
        responses: { ...okJson(ServerTimeSchema, "Server time"), ...problemResponses(429) },
      }),
      (c) => c.json({ serverTime: Date.now() }, 200),
    );
  return router;
}
