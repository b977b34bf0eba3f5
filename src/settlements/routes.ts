import { z } from "@hono/zod-openapi";
import { chargeClientIp } from "../access/middleware";
import { admit, GATEWAY_LIMIT, rateLimitHeaders } from "../access/rate-limit";
import { concatBytes, sha256Hex } from "../core/encoding";
import { isJsonRequest } from "../core/media-types";
import { ProblemError, problem } from "../core/problem";
import { jsonBody, problemResponses } from "../core/schemas";
import { createRouter, fieldErrors } from "../http/router";
import { activeSecrets } from "./gateways";
import { ledgerOptions, recordEvent } from "./ledger";
import { CallbackAnswerSchema, CallbackBodySchema } from "./schemas";
import { isTimestampFresh, verifyWebhook } from "./webhook-signature";

const CALLBACK_MAX_BYTES = 64 * 1024;

/** Reads at most `limit` bytes of the body; more is 413 without reading the rest. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get("Content-Length") ?? "NaN");
  if (declared > limit) throw problem("PAYLOAD_TOO_LARGE", `a callback body is at most ${limit} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) {
        await reader.cancel();
        throw problem("PAYLOAD_TOO_LARGE", `a callback body is at most ${limit} bytes`);
      }
      chunks.push(value);
    }
  }
  return concatBytes(chunks);
}

function header(request: Request, name: string): string {
  const value = request.headers.get(name);
  if (!value) throw problem("INVALID_SIGNATURE", `the ${name} header is missing`);
  return value;
}

/**
 * Who sent the callback: an approved gateway, one of whose active secrets signed these raw
 * bytes within ±300 s. Anything refused here — media type and size included, like ingest —
 * is refused before a gateway vouched for it, so it counts against the client IP (docs/limits.md)
 * and never against the gateway it names: anyone can name a gateway, and must not be able to
 * spend its budget.
 */
async function authenticateCallback(env: Env, request: Request): Promise<{ gatewayId: string; webhookId: string; rawBytes: Uint8Array<ArrayBuffer> }> {
  try {
    if (!isJsonRequest(request)) throw problem("UNSUPPORTED_MEDIA_TYPE", "send the callback as Content-Type: application/json");
    const rawBytes = await readLimited(request, CALLBACK_MAX_BYTES);
    const gatewayId = request.headers.get("X-GATEWAY-ID");
    if (!gatewayId || gatewayId.length > 128) throw problem("UNKNOWN_GATEWAY", "the X-GATEWAY-ID header is missing or longer than 128 characters");
    const webhookId = header(request, "webhook-id");
    const timestamp = header(request, "webhook-timestamp");
    const signature = header(request, "webhook-signature");
    const secrets = await activeSecrets(env, gatewayId);
    if (!secrets) throw problem("UNKNOWN_GATEWAY", `gateway ${gatewayId.slice(0, 40)} is not approved or was revoked`);
    if (!/^\d{1,12}$/.test(timestamp) || !isTimestampFresh(Number(timestamp), Date.now())) {
      throw problem("TIMESTAMP_OUT_OF_WINDOW", "webhook-timestamp must be Unix seconds within ±300 s of the server time", { serverTime: Date.now() });
    }
    if (!(await verifyWebhook(secrets, webhookId, timestamp, rawBytes, signature))) {
      throw problem("INVALID_SIGNATURE", "no signature in webhook-signature matches an active secret of this gateway over the raw body");
    }
    return { gatewayId, webhookId, rawBytes };
  } catch (error) {
    if (error instanceof ProblemError) throw await chargeClientIp(env, request, error);
    throw error;
  }
}

const callbackDoc = {
  method: "post" as const,
  path: "/callback",
  operationId: "deliverSettlementCallback",
  tags: ["Settlement callbacks"],
  summary: "Settlement callback from an approved gateway (Standard Webhooks)",
  description:
    "Headers: X-GATEWAY-ID, webhook-id, webhook-timestamp (Unix seconds, ±300 s), webhook-signature (`v1,<base64 HMAC-SHA256(secret, id.timestamp.rawBody)>`, space-separated). Body ≤ 64 KiB, verified as raw bytes before parsing. Every accepted event is written to D1 before the answer. Settlements are keyed by (gateway, settlementId): a gateway only ever touches its own. A settlement holds at most 100 events waiting for a gap; past that 429 HELD_LIMIT with Retry-After. 50 requests per second per gateway once authenticated; a callback refused before that (415, 413, 401) counts against the client IP's public limit.",
  request: {
    headers: z.object({
      "X-GATEWAY-ID": z.string().openapi({ example: "gw_0123456789abcdef", description: "The approved gateway's id" }),
      "webhook-id": z.string().openapi({ example: "evt_1", description: "The event id; equals the body's id" }),
      "webhook-timestamp": z.string().openapi({ example: "1763800000", description: "Unix seconds, within ±300 s of the server's clock" }),
      "webhook-signature": z
        .string()
        .openapi({ example: "v1,l8X1h3dHy7/0Kmt9EBXxggPzfCKYT23exiC4VfKs0XY=", description: "Space-separated v1,<base64 signature> entries" }),
    }),
    ...jsonBody(CallbackBodySchema),
  },
  responses: {
    200: { description: "applied, duplicate or stale", content: { "application/json": { schema: CallbackAnswerSchema } } },
    202: {
      description:
        "quarantined (reason transition: the table forbids the step; reason conflict: the sequence already has another event) or held (waits for an earlier sequence, at most SETTLEMENT_GAP_HOLD_MS)",
      content: { "application/json": { schema: CallbackAnswerSchema } },
    },
    ...problemResponses(400, 401, 409, 413, 415, 429, 503),
  },
};

export const callbackRoutes = createRouter();
// Documented for OpenAPI but not validated by the router: the body must be verified as raw
// bytes before anything parses it.
callbackRoutes.openAPIRegistry.registerPath(callbackDoc);
callbackRoutes.post(
  "/callback",
  // The body is verified as raw bytes before it is parsed, so validation is done by hand here;
  // the gateway's limit applies once the gateway is authenticated.
  async (c) => {
    const { gatewayId, webhookId, rawBytes } = await authenticateCallback(c.env, c.req.raw);
    const admission = await admit(c.env, `gateway:${gatewayId}`, GATEWAY_LIMIT, `${GATEWAY_LIMIT} callbacks per second per gateway`);
    const limitHeaders = rateLimitHeaders(admission);
    try {
      // JSON is UTF-8 (RFC 8259); decoding strictly keeps the stored raw body byte-for-byte the signed one.
      let rawBody: string;
      let json: unknown;
      try {
        rawBody = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(rawBytes);
        json = JSON.parse(rawBody);
      } catch {
        throw problem("VALIDATION_FAILED", "the body is not valid UTF-8 JSON", { errors: [{ path: "body", message: "malformed JSON" }] });
      }
      const parsed = CallbackBodySchema.safeParse(json);
      if (!parsed.success) throw problem("VALIDATION_FAILED", "the callback does not match the schema", { errors: fieldErrors(parsed.error.issues, "body") });
      if (parsed.data.id !== webhookId)
        throw problem("VALIDATION_FAILED", "the body's id must equal the webhook-id header", {
          errors: [{ path: "body.id", message: "differs from webhook-id" }],
        });
      if (parsed.data.gatewayId !== gatewayId)
        throw problem("VALIDATION_FAILED", "the body's gatewayId must equal the X-GATEWAY-ID header", {
          errors: [{ path: "body.gatewayId", message: "differs from X-GATEWAY-ID" }],
        });
      const recorded = await recordEvent(
        c.env.DB,
        { gatewayId, webhookId, rawBody, bodySha256: await sha256Hex(rawBytes), body: parsed.data, receivedAt: Date.now() },
        ledgerOptions(c.env),
      );
      const status = recorded.outcome === "quarantined" || recorded.outcome === "held" ? 202 : 200;
      return c.json({ received: true as const, ...recorded }, status, limitHeaders);
    } catch (error) {
      // The gateway's RateLimit headers go on its errors too (docs/limits.md).
      if (error instanceof ProblemError) Object.assign(error.headers, limitHeaders);
      throw error;
    }
  },
);
