import { Hono } from "hono";
import { authenticateSigned, clientIp } from "../access/middleware";
import { principalOfIp, principalOfKey } from "../access/keys";
import { problem } from "../core/problem";
import type { AppEnv, Env } from "../env";
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
export const streamRoutes = new Hono<AppEnv>()
  .get("/api/ws", (c) => toShard(c.env, c.req.raw, principalOfIp(clientIp(c.req.raw))))
  .get("/v1/ws", async (c) => {
    const { keyId } = await authenticateSigned(c.env, c.req.raw, { permission: "stream", allowQueryForm: true });
    return toShard(c.env, c.req.raw, principalOfKey(keyId));
  });
