import { createRoute, z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { chargeClientIp, signedAccess } from "../access/middleware";
import { isJsonRequest } from "../core/media-types";
import { problem } from "../core/problem";
import { jsonBody, okJson, problemResponses } from "../core/schemas";
import type { MarketQuestion } from "../domain/market-answer";
import type { AppEnv } from "../http/env";
import { createRouter, routesOf } from "../http/router";
import { ingest } from "../market/ingest";
import {
  BookTickerSchema,
  IngestBodySchema,
  IngestResultSchema,
  KlineSchema,
  MarketsSchema,
  OrderBookSchema,
  PricesQuery,
  PricesSchema,
  TickerSchema,
  TradeSchema,
} from "../market/schemas";
import { batchOutcome } from "../metrics/outcomes";
import { klinesQuestion, readContext, readMarkets, readOneOrMany, readPair, readPrices, sendRead, tradesQuestion } from "../reads/reads";
import { SymbolDepthQuery, SymbolKlinesQuery, SymbolOrSymbolsQuery, SymbolTradesQuery } from "./schemas";

/** An ingest batch of 1,000 book updates and 1,000 trades fits (docs/publishing.md#batches). */
export const INGEST_MAX_BYTES = 1024 * 1024;
const tags = ["Signed (API key)"];
const security = [{ ApiKey: [], Signature: [], Timestamp: [] }];
const signedProblems = problemResponses(400, 401, 403, 404, 429);
const read = signedAccess("read");

/**
 * JSON only, and at most 1 MiB, checked before the signature is computed over the body.
 * These refusals come before any key vouched for the request, so they count against the
 * client IP's public limit, like a failed authentication.
 */
const ingestBodyRules = [
  createMiddleware<AppEnv>(async (c, next) => {
    if (!isJsonRequest(c.req.raw)) {
      throw await chargeClientIp(c.env, c.req.raw, problem("UNSUPPORTED_MEDIA_TYPE", "send the batch as Content-Type: application/json"));
    }
    await next();
  }),
  bodyLimit({
    maxSize: INGEST_MAX_BYTES,
    onError: async (c) => {
      throw await chargeClientIp(c.env as Env, c.req.raw, problem("PAYLOAD_TOO_LARGE", `an ingest batch is at most ${INGEST_MAX_BYTES} bytes`));
    },
  }),
  signedAccess("publish"),
];

const route = routesOf({ tags, security, middleware: [read] });

export const signedRoutes = createRouter()
  .openapi(
    route("get", "/prices", {
      operationId: "signedGetPrices",
      summary: "Prices of active assets (as /api/prices)",
      request: { query: PricesQuery },
      responses: { ...okJson(PricesSchema, "Prices"), ...signedProblems },
    }),
    async (c) => sendRead<z.infer<typeof PricesSchema>>(c, await readPrices(readContext(c), c.req.valid("query"))),
  )
  .openapi(
    route("get", "/markets", {
      operationId: "signedListMarkets",
      summary: "Markets and assets (as /api/markets)",
      responses: { ...okJson(MarketsSchema, "Markets"), ...signedProblems },
    }),
    async (c) => sendRead<z.infer<typeof MarketsSchema>>(c, await readMarkets(readContext(c))),
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/ingest",
      operationId: "ingestMarketData",
      tags,
      security,
      middleware: ingestBodyRules,
      summary: "Publish trades and book updates of one market (an operator's publishing key)",
      description:
        "Signed with a publishing key the operator issued (POST /admin/publish-keys); account keys cannot publish. A market outside the key's markets is 403 FORBIDDEN_MARKET, nothing applied. `book` is one update or an array of up to 1,000 in sequence order, applied in order; with up to 1,000 trades, the batch is all or nothing: the first book update that fails is named (`bookIndex`) and nothing of the batch is applied. A resend of any of the market's last 1,024 applied book updates answers `book: duplicate` and changes nothing. A trade already taken — the same id, its time in the same minute, within 25 hours — is skipped: retries are safe. The 200 means durable: the batch survives a crash of the whole runtime and a resend afterwards is a duplicate. A delta whose sequence is not the last + 1 is 409 SEQUENCE_GAP: send a snapshot next. Values finer than the market's scales, non-positive values or a crossed book: 400. Halted or delisted market: 409 MARKET_NOT_TRADING. A market that failed inside its group's host is held alone: 503 MARKET_UNAVAILABLE with Retry-After, nothing applied, its group's other markets unaffected; a host past 98 % of its 10 GB: 503 STORAGE_FULL. Body at most 1 MiB. Publishing has its own limit per key, 200 requests a second, apart from the key's reads (docs/limits.md#publishing).",
      request: jsonBody(IngestBodySchema),
      responses: {
        ...okJson(IngestResultSchema, "Applied"),
        ...problemResponses(400, 401, 403, 404, 409, 413, 415, 429),
      },
    }),
    async (c) => {
      const grant = c.get("publishGrant");
      if (grant === undefined) throw new Error("ingest without a publishing grant");
      // One request in flight per market: written at once, not with a tick it would be alone in.
      const result = await ingest(c.env, grant, c.req.valid("json"), Date.now(), { commit: "now" });
      c.set("batchOutcome", batchOutcome(result));
      return c.json(result, 200);
    },
  );

// Latest records of one kind, of one shape: one market's with `symbol`, an array with `symbols` or none.
for (const { path, operationId, kind, summary, schema, ok } of [
  {
    path: "/ticker/24hr",
    operationId: "signedGetTicker",
    kind: "ticker",
    summary: "24-hour ticker: one record with `symbol`, an array with `symbols` or none",
    schema: TickerSchema,
    ok: "Ticker record(s)",
  },
  {
    path: "/book-ticker",
    operationId: "signedGetBookTicker",
    kind: "bookTicker",
    summary: "Best bid and ask: one record with `symbol`, an array with `symbols` or none (as /api/book-ticker)",
    schema: BookTickerSchema,
    ok: "Top(s) of the book",
  },
] as const) {
  const answer = z.union([schema, z.array(schema)]);
  signedRoutes.openapi(
    route("get", path, { operationId, summary, request: { query: SymbolOrSymbolsQuery }, responses: { ...okJson(answer, ok), ...signedProblems } }),
    async (c) => sendRead<z.infer<typeof answer>>(c, await readOneOrMany(readContext(c), c.req.valid("query"), { kind })),
  );
}

/** A read of the market `symbol` names, its question made from the rest of the query (typed here, where its query is known). */
function bySymbol<Q extends z.ZodType<{ symbol: string }>, S extends z.ZodType>(read: {
  path: string;
  operationId: string;
  summary: string;
  question: (rest: Omit<z.infer<Q>, "symbol">) => MarketQuestion;
  query: Q;
  schema: S;
  ok: string;
}) {
  return { ...read, question: read.question as (rest: object) => MarketQuestion };
}

// Reads of one market, of one shape: the market named by `symbol`, the rest of the query its question.
for (const { path, operationId, summary, question, query, schema, ok } of [
  bySymbol({
    path: "/orderbook",
    operationId: "signedGetOrderBook",
    summary: "Order book snapshot (as /api/orderbook)",
    question: ({ depth }) => ({ kind: "book", depth }),
    query: SymbolDepthQuery,
    schema: OrderBookSchema,
    ok: "Order book",
  }),
  bySymbol({
    path: "/trades",
    operationId: "signedListTrades",
    summary: "Latest trades, newest first (as /api/trades)",
    question: tradesQuestion,
    query: SymbolTradesQuery,
    schema: z.array(TradeSchema),
    ok: "Trades",
  }),
  bySymbol({
    path: "/klines",
    operationId: "signedListKlines",
    summary: "Candles (as /api/klines)",
    question: klinesQuestion,
    query: SymbolKlinesQuery,
    schema: z.array(KlineSchema),
    ok: "Candles",
  }),
]) {
  signedRoutes.openapi(route("get", path, { operationId, summary, request: { query }, responses: { ...okJson(schema, ok), ...signedProblems } }), async (c) => {
    const { symbol, ...rest } = c.req.valid("query");
    return sendRead<z.infer<typeof schema>>(c, await readPair(readContext(c), symbol, question(rest)));
  });
}
