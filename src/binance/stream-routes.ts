import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/env";
import { DIALECT_HEADER, DIALECT_OPTIONS_HEADER, DIALECT_STREAMS_HEADER, encodeNames } from "../streams/dialect";
import { toShardByAddress } from "../streams/routes";
import { BINANCE_DIALECT } from "./stream-dialect";
import { namesIn } from "./streams";

/**
 * Hands a Binance connection to the address's shard: the same shards, limits and sources as `/api/ws`.
 * The names travel percent-encoded: a header cannot hold a control character a path may decode to.
 */
function upgrade(c: Context<AppEnv>, framing: "raw" | "combined", names: string): Promise<Response> {
  return toShardByAddress(c, {
    [DIALECT_HEADER]: BINANCE_DIALECT,
    [DIALECT_OPTIONS_HEADER]: JSON.stringify({ combined: framing === "combined" }),
    [DIALECT_STREAMS_HEADER]: encodeNames(namesIn(names)),
  });
}

/** The stream names of a raw connection's path; text that does not decode names nothing. */
function namesInPath(path: string): string {
  try {
    return decodeURIComponent(path.replace(/^.*?\/ws\//, ""));
  } catch {
    return "";
  }
}

const DESCRIPTION =
  "Upgrade: websocket. Binance's stream names in lower case (btcusdt@trade, @aggTrade, @kline_<interval>[@+08:00], @miniTicker, @ticker, @ticker_<1h|4h|1d>, @avgPrice, @bookTicker, @depth[@100ms], @depth<5|10|20>[@100ms], !miniTicker@arr, !ticker@arr, !ticker_<1h|4h|1d>@arr) and its SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS / SET_PROPERTY / GET_PROPERTY messages; 5 connections per client address in all (with /api/ws and the WebSocket API), up to 1024 streams per connection, 5 messages a second (docs/binance.md#streams).";

/**
 * `GET /ws`, `GET /ws/{streams}` (raw frames) and `GET /stream?streams=a/b` (combined `{stream, data}`
 * frames), on the Binance router mounted at `/binance`; `limit` stands in front of each upgrade.
 *
 * @example
 * binanceStreamRoutes(router, publicLimit);
 */
export function binanceStreamRoutes(router: OpenAPIHono<AppEnv>, limit: MiddlewareHandler<AppEnv>): void {
  const responses = {
    101: { description: "Switching Protocols" },
    400: { description: "Not a WebSocket upgrade (-1130)" },
    429: { description: "-1003: over the request limit, or a sixth connection" },
  };
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/ws/{streams}",
    operationId: "binanceRawStream",
    tags: ["Binance-compatible streams"],
    summary: "Raw streams: each frame is the event itself",
    description: `${DESCRIPTION} The path may name streams separated by /; a name that is no stream subscribes to nothing, as on Binance (GET /binance/ws works too).`,
    request: { params: z.object({ streams: z.string().openapi({ example: "btcusdt@depth@100ms" }) }) },
    responses,
  });
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/stream",
    operationId: "binanceCombinedStream",
    tags: ["Binance-compatible streams"],
    summary: "Combined streams: each frame is {stream, data}",
    description: DESCRIPTION,
    request: { query: z.object({ streams: z.string().optional().openapi({ example: "btcusdt@trade/btcusdt@depth@100ms" }) }) },
    responses,
  });
  router.get("/ws", limit, (c) => upgrade(c, "raw", ""));
  router.get("/ws/*", limit, (c) => upgrade(c, "raw", namesInPath(c.req.path)));
  router.get("/stream", limit, (c) => upgrade(c, "combined", c.req.query("streams") ?? ""));
}
