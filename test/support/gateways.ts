import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { call, callJson } from "./http";

export const ADMIN = { Authorization: "Bearer test-admin-token" };

export async function approveGateway(name = "Test Gateway", id?: string): Promise<{ id: string; secret: string; secretId: string }> {
  const { status, body } = await callJson("/admin/gateways", {
    method: "POST",
    headers: { ...ADMIN, "Content-Type": "application/json" },
    body: JSON.stringify({ name, ...(id ? { id } : {}) }),
  });
  if (status !== 201) throw new Error(`approve: ${status} ${JSON.stringify(body)}`);
  return { id: body.id, secret: body.secret.secret, secretId: body.secret.id };
}

let events = 0;

export function callbackBody(
  gatewayId: string,
  data: { settlementId: string; sequence: number; status: string; amount?: string } & Record<string, unknown>,
  id = `evt_${++events}_${crypto.randomUUID().slice(0, 8)}`,
) {
  return {
    id,
    type: "settlement.updated",
    gatewayId,
    occurredAt: Date.now(),
    data: { chain: "eip155:1", asset: "USDC", amount: "1250.500000", txHash: "0xabc", confirmations: 1, requiredConfirmations: 12, ...data },
  };
}

/**
 * `v1,<signature>` by the official `standardwebhooks` package. It signs text, so bytes that are
 * not UTF-8 (a test of the service's refusal of them) are signed with node:crypto's HMAC instead.
 */
function sign(secret: string, webhookId: string, timestamp: string, bytes: Uint8Array): string {
  const text = new TextDecoder().decode(bytes);
  if (Buffer.from(text).equals(Buffer.from(bytes))) return new Webhook(secret).sign(webhookId, new Date(Number(timestamp) * 1000), text);
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const hmac = createHmac("sha256", key).update(`${webhookId}.${timestamp}.`).update(bytes).digest("base64");
  return `v1,${hmac}`;
}

/** A settlement as the operator API shows it: gateway and settlement id together name it. */
export function settlementOf(gateway: { id: string }, settlementId: string) {
  return callJson(`/admin/gateways/${gateway.id}/settlements/${settlementId}`, { headers: ADMIN });
}

/**
 * Posts a callback signed like a gateway: raw body bytes, seconds timestamp, v1 signature. The
 * signature comes from the official `standardwebhooks` package, an implementation independent of
 * the service's own verifier.
 */
export async function deliver(
  gateway: { id: string; secret: string },
  body: unknown,
  options: { raw?: string | Uint8Array; stream?: boolean; timestamp?: number; webhookId?: string; secret?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const raw = options.raw ?? JSON.stringify(body);
  const webhookId = options.webhookId ?? (body as { id: string }).id;
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : new Uint8Array(raw);
  const signature = sign(options.secret ?? gateway.secret, webhookId, timestamp, bytes);
  // `stream`: a body of unknown length (no Content-Length), as a chunked upload arrives.
  const payload = options.stream ? new Blob([bytes]).stream() : typeof raw === "string" ? raw : bytes;
  return call("/api/gateway/callback", {
    method: "POST",
    body: payload,
    headers: {
      "Content-Type": "application/json",
      "X-GATEWAY-ID": gateway.id,
      "webhook-id": webhookId,
      "webhook-timestamp": timestamp,
      "webhook-signature": signature,
      ...options.headers,
    },
  });
}
