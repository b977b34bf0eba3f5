import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { clientPrincipal } from "../access/client-address";
import { principalOfKey } from "../access/keys";
import { authenticateSigned } from "../access/middleware";
import { rateLimitHeaders } from "../access/sliding-window";
import { streamHub } from "../core/object-ids";
import { type ProblemResult, problem } from "../core/problem";
import { problemResponses } from "../core/schemas";
import type { MarketConfig } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import { createRouter } from "../http/router";
import { ensureRegistry, findMarket } from "../registry/copy";
import { MAX_CATCH_UP_MS } from "./catch-up";
import { DIALECT_HEADER, DIALECT_STREAMS_HEADER, decodeNames, dialectOf } from "./dialect";
import { placeConnection, shardLayout } from "./placement";
import { MAX_STREAMS_PER_CONNECTION, parseFrom, parseStreamName, type StreamName } from "./protocol";
import { PRINCIPAL_HEADER, SHARD_HEADER } from "./stream-hub";

/** The markets a connection names at connect, in the order named (native `?streams=`, or a dialect's names). */
async function marketsNamed(env: Env, request: Request, dialect: Record<string, string>): Promise<MarketConfig[]> {
  const spoken = dialectOf(dialect[DIALECT_HEADER]);
  const names = spoken
    ? decodeNames(dialect[DIALECT_STREAMS_HEADER] ?? null, MAX_STREAMS_PER_CONNECTION)
    : (new URL(request.url).searchParams.get("streams") ?? "").split(",", MAX_STREAMS_PER_CONNECTION).filter((name) => name !== "");
  if (names.length === 0) return [];
  await ensureRegistry(env);
  const streams = names.flatMap((name): StreamName[] => {
    const stream = spoken ? spoken.parse(name)?.native : parseStreamName(name);
    return stream ? [stream] : [];
  });
  // Only a market's streams place a connection: `prices`, `tickers`, `status` and `heartbeat` come to every shard alike.
  return streams.flatMap((stream) => {
    const market = ["prices", "tickers", "status", "heartbeat"].includes(stream.kind) ? undefined : findMarket(stream.subject);
    return market ? [market] : [];
  });
}

/**
 * Hands the upgrade to a shard of the group of the markets it names (docs/streams.md#placement). The shard
 * takes a lease of the principal's guard (the five connections) and answers 101 with the socket, or a `ProblemResult` (429 `STREAM_LIMIT`) that becomes problem
 * JSON here, with the request id, like every other error. The 101 is re-made here so it can
 * carry `headers` (a response from an object has immutable headers, and a 101 cannot be copied).
 */
async function toShard(
  env: Env,
  request: Request,
  principal: string,
  headers: Record<string, string>,
  dialect: Record<string, string> = {},
): Promise<Response> {
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
    throw problem("VALIDATION_FAILED", "this is a WebSocket endpoint: connect with Upgrade: websocket", undefined, headers);
  }
  const from = parseFrom(new URL(request.url).searchParams.get("from"));
  if (from === null || (from !== undefined && (from > Date.now() || from < Date.now() - MAX_CATCH_UP_MS))) {
    throw problem(
      "VALIDATION_FAILED",
      `from is a moment in Unix milliseconds, not in the future and at most ${MAX_CATCH_UP_MS / 3_600_000} hours back (docs/streams.md#from-any-moment)`,
      undefined,
      headers,
    );
  }
  const shard = placeConnection(shardLayout(env), principal, await marketsNamed(env, request, dialect));
  const forwarded = new Headers(request.headers);
  // Only the routes say who connects and in which dialect: a client's own `X-Stream-` header says nothing.
  for (const name of [...forwarded.keys()]) if (name.startsWith("x-stream-")) forwarded.delete(name);
  forwarded.set(PRINCIPAL_HEADER, principal);
  forwarded.set(SHARD_HEADER, shard);
  for (const [name, value] of Object.entries(dialect)) forwarded.set(name, value);
  const response = await streamHub(env, shard).fetch(new Request(request, { headers: forwarded }));
  if (response.webSocket) return new Response(null, { status: 101, webSocket: response.webSocket, headers });
  const refusal = await response.json<ProblemResult>();
  const code = refusal.problem?.code ?? "INTERNAL_ERROR";
  throw problem(code, refusal.problem?.detail ?? "the stream shard refused the connection", refusal.problem?.extras, headers);
}

/**
 * A public upgrade, counted per client address (`/api/ws`, and the Binance streams with their
 * `dialect` headers): handed to the address's shard with the request id and the limit's headers.
 */
export function toShardByAddress(c: Context<AppEnv>, dialect?: Record<string, string>): Promise<Response> {
  return toShard(c.env, c.req.raw, clientPrincipal(c.req.raw), { "X-Request-Id": c.get("requestId"), ...c.get("rateLimitHeaders") }, dialect);
}

/**
 * The OpenAPI entry of a WebSocket endpoint (an upgrade has no body schema to validate):
 * `GET /api/ws` (per client IP; the public limit applies to the upgrade request) and
 * `GET /v1/ws` (per API key with permission `stream`; signed headers, or for browsers the
 * query form `apiKey`, `timestamp`, `signature` over the path `/v1/ws`).
 */
function documentStream(router: ReturnType<typeof createRouter>, operationId: string, summary: string): void {
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/ws",
    operationId,
    tags: ["Streams"],
    summary,
    description:
      "Upgrade: websocket. Streams ticker.{SYMBOL}[.{1h|4h|1d}], avgPrice.{SYMBOL}, bookTicker.{SYMBOL}, trades.{SYMBOL}, book.{SYMBOL}, kline.{SYMBOL}.{interval}[@+08:00], prices.{QUOTE}, tickers[.{1h|4h|1d}], heartbeat; messages subscribe (with `from` to start in the past) / unsubscribe / list / ping / more. Every message each way, with its payload schema, is in the AsyncAPI 3 document GET /asyncapi.json; the guide is docs/streams.md. A sixth connection is refused before the upgrade.",
    request: {
      query: z.object({
        streams: z.string().optional().openapi({
          example: "book.BTCUSDT,ticker.BTCUSDT",
          description: "Subscribe at connect; their markets' group decides the shard (docs/streams.md#placement)",
        }),
        resume: z
          .string()
          .optional()
          .openapi({ example: "book.BTCUSDT:1234", description: "Continue books after a lost connection from these sequences (docs/streams.md#resuming)" }),
        from: z.string().optional().openapi({
          example: "1767225600000",
          description:
            "Start the book and trades streams named at connect at this moment (Unix ms, at most 24 h back) and continue them live without a gap (docs/streams.md#from-any-moment)",
        }),
      }),
    },
    responses: { 101: { description: "Switching Protocols" }, ...problemResponses(400, 401, 403, 429) },
  });
}

/**
 * `GET /ws` for anyone, mounted at `/api`: 5 connections per client address; `limit` stands in
 * front of the upgrade request.
 *
 * @example
 * app.route("/api", publicStreamRoutes(publicLimit));
 */
export function publicStreamRoutes(limit: MiddlewareHandler<AppEnv>) {
  const router = createRouter();
  documentStream(router, "openPublicStream", "WebSocket streams, public (5 connections per client address)");
  return router.get("/ws", limit, (c) => toShardByAddress(c));
}

/** `GET /ws` with an API key (permission `stream`), mounted at `/v1`: 5 connections per key; the key's limit applies to the upgrade. */
export const signedStreamRoutes = createRouter();
documentStream(
  signedStreamRoutes,
  "openSignedStream",
  "WebSocket streams, signed (permission stream; 5 connections per key; headers or ?apiKey=&timestamp=&signature= over /v1/ws)",
);
signedStreamRoutes.get("/ws", async (c) => {
  const { keyId, admission } = await authenticateSigned(c.env, c.req.raw, { permission: "stream", allowQueryForm: true });
  return toShard(c.env, c.req.raw, principalOfKey(keyId), { "X-Request-Id": c.get("requestId"), ...rateLimitHeaders(admission) });
});
