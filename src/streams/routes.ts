import { z } from "@hono/zod-openapi";
import { authenticateSigned, clientIp } from "../access/middleware";
import { principalOfIp, principalOfKey } from "../access/keys";
import { problem } from "../core/problem";
import { createRouter } from "../core/router";
import { problemResponses } from "../core/schemas";
import type { Env } from "../env";
import { shardOf } from "./protocol";
import { PRINCIPAL_HEADER, SHARD_HEADER } from "./stream-hub";

/** Hands the upgrade to the shard that holds every connection of the principal. */
function toShard(env: Env, request: Request, principal: string): Promise<Response> {
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
    throw problem("VALIDATION_FAILED", "this is a WebSocket endpoint: connect with Upgrade: websocket");
  }
  const shard = shardOf(principal, Number(env.STREAM_SHARDS ?? "1") || 1);
  const headers = new Headers(request.headers);
  headers.set(PRINCIPAL_HEADER, principal);
  headers.set(SHARD_HEADER, shard);
  return env.STREAM_HUB.getByName(shard).fetch(new Request(request, { headers }));
}

/**
 * `GET /api/ws` (per client IP; the public limit applies to the upgrade request) and
 * `GET /v1/ws` (per API key with permission `stream`; signed headers, or for browsers the
 * query form `apiKey`, `timestamp`, `signature` over the path `/v1/ws`).
 */
export const streamRoutes = createRouter();
for (const [path, summary] of [
  ["/api/ws", "WebSocket streams, public (5 connections per client IP)"],
  ["/v1/ws", "WebSocket streams, signed (permission stream; 5 connections per key; headers or ?apiKey=&timestamp=&signature= over /v1/ws)"],
] as const) {
  streamRoutes.openAPIRegistry.registerPath({
    method: "get",
    path,
    tags: ["Streams"],
    summary,
    description:
      "Upgrade: websocket. Streams ticker.{SYMBOL}, trades.{SYMBOL}, book.{SYMBOL}, prices.{QUOTE}; messages subscribe / unsubscribe / list / ping (contract section 6, README 'WebSocket streams'). A sixth connection is refused before the upgrade.",
    request: { query: z.object({ streams: z.string().optional().openapi({ example: "book.BTCUSDT,ticker.BTCUSDT", description: "Subscribe at connect" }) }) },
    responses: { 101: { description: "Switching Protocols" }, ...problemResponses(400, 401, 403, 429) },
  });
}
streamRoutes
  .get("/api/ws", (c) => toShard(c.env, c.req.raw, principalOfIp(clientIp(c.req.raw))))
  .get("/v1/ws", async (c) => {
    const { keyId } = await authenticateSigned(c.env, c.req.raw, { permission: "stream", allowQueryForm: true });
    return toShard(c.env, c.req.raw, principalOfKey(keyId));
  });
