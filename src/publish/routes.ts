import { z } from "@hono/zod-openapi";
import { clientIp } from "../access/client-address";
import { principalOfKey } from "../access/keys";
import { authenticateSigned } from "../access/middleware";
import { rateLimitHeaders } from "../access/sliding-window";
import { publishChannel } from "../core/object-ids";
import { type ProblemResult, problem } from "../core/problem";
import { problemResponses } from "../core/schemas";
import { createRouter } from "../http/router";
import { MAX_CHANNELS_PER_KEY, MAX_PENDING_BYTES_PER_KEY, MAX_UNACKED, MAX_UNACKED_PER_KEY } from "./protocol";
import { IP_HEADER, KEY_CHECK_EVERY_MS, KEY_HEADER } from "./publish-channel-object";

/**
 * `GET /publish`, mounted at `/v1`: the publisher channel (docs/publishing.md#the-publisher-channel),
 * a WebSocket signed like `/v1/ws` with an operator's publishing key, carrying ingest batches for any
 * of the key's markets. The upgrade counts once against the key's publish limit.
 *
 * @example
 * app.route("/v1", publishRoutes);
 */
export const publishRoutes = createRouter();
publishRoutes.openAPIRegistry.registerPath({
  method: "get",
  path: "/publish",
  operationId: "openPublisherChannel",
  tags: ["Signed (API key)"],
  security: [{ ApiKey: [], Signature: [], Timestamp: [] }],
  summary: "The publisher channel: ingest batches over one WebSocket (an operator's publishing key)",
  description: `Upgrade: websocket, signed like GET /v1/ws (headers, or ?apiKey=&timestamp=&signature= over /v1/publish) with a publishing key. Each message is a POST /v1/ingest body with an \`id\`; each is answered {id, result} (the IngestResult) or {id, error} (the problem), with the same semantics: dedupe, sequences, rules, all or nothing, FORBIDDEN_MARKET outside the key's markets. Batches of one market apply in the order sent. At most ${MAX_CHANNELS_PER_KEY} connections per key (a fifth is 429 STREAM_LIMIT). At most ${MAX_UNACKED} batches may await their answer on a connection, and ${MAX_UNACKED_PER_KEY} batches or ${MAX_PENDING_BYTES_PER_KEY} bytes on all of a key's: one more is answered with error RATE_LIMITED and not applied. The key is re-checked at least every ${KEY_CHECK_EVERY_MS / 1000} s: revocation, expiry and an allow-list change close the connection (1008), a market-list change holds the next batch.`,
  request: { query: z.object({ apiKey: z.string().optional(), timestamp: z.string().optional(), signature: z.string().optional() }) },
  responses: { 101: { description: "Switching Protocols" }, ...problemResponses(400, 401, 403, 429, 503) },
});
publishRoutes.get("/publish", async (c) => {
  const { keyId, admission } = await authenticateSigned(c.env, c.req.raw, { permission: "publish", allowQueryForm: true });
  const headers = { "X-Request-Id": c.get("requestId"), ...rateLimitHeaders(admission) };
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw problem("VALIDATION_FAILED", "this is a WebSocket endpoint: connect with Upgrade: websocket", undefined, headers);
  }
  const forwarded = new Headers(c.req.raw.headers);
  forwarded.set(KEY_HEADER, keyId);
  forwarded.set(IP_HEADER, clientIp(c.req.raw));
  forwarded.set("X-Request-Id", c.get("requestId"));
  const response = await publishChannel(c.env, principalOfKey(keyId)).fetch(new Request(c.req.raw, { headers: forwarded }));
  if (response.webSocket) return new Response(null, { status: 101, webSocket: response.webSocket, headers });
  const refusal = await response.json<ProblemResult>().catch(() => null);
  if (refusal?.problem) throw problem(refusal.problem.code, refusal.problem.detail, refusal.problem.extras, headers);
  throw problem("UNAVAILABLE", "the publisher channel did not open; try again", undefined, headers);
});
