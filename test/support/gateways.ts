import { signWebhook } from "../../src/settlements/webhook-signature";
import { call, callJson } from "./http";

export const ADMIN = { Authorization: "Bearer test-admin-token" };

export async function approveGateway(name = "Test Gateway"): Promise<{ id: string; secret: string; secretId: string }> {
  const { status, body } = await callJson("/admin/gateways", { method: "POST", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify({ name }) });
  if (status !== 201) throw new Error(`approve: ${status} ${JSON.stringify(body)}`);
  return { id: body.id, secret: body.secret.secret, secretId: body.secret.id };
}

let events = 0;

export function callbackBody(gatewayId: string, data: { settlementId: string; sequence: number; status: string; amount?: string } & Record<string, unknown>, id = `evt_${++events}_${crypto.randomUUID().slice(0, 8)}`) {
  return {
    id,
    type: "settlement.updated",
    gatewayId,
    occurredAt: Date.now(),
    data: { chain: "eip155:1", asset: "USDC", amount: "1250.500000", txHash: "0xabc", confirmations: 1, requiredConfirmations: 12, ...data },
  };
}

/** Posts a callback signed like a gateway: raw body bytes, seconds timestamp, v1 signature. */
export async function deliver(
  gateway: { id: string; secret: string },
  body: unknown,
  options: { raw?: string | Uint8Array; stream?: boolean; timestamp?: number; webhookId?: string; secret?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const raw = options.raw ?? JSON.stringify(body);
  const webhookId = options.webhookId ?? (body as { id: string }).id;
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : new Uint8Array(raw);
  const signature = await signWebhook(options.secret ?? gateway.secret, webhookId, timestamp, bytes);
  // `stream`: a body of unknown length (no Content-Length), as a chunked upload arrives.
  const payload = options.stream ? new Blob([bytes]).stream() : typeof raw === "string" ? raw : bytes;
  return call("/api/gateway/callback", {
    method: "POST",
    body: payload,
    headers: { "Content-Type": "application/json", "X-GATEWAY-ID": gateway.id, "webhook-id": webhookId, "webhook-timestamp": timestamp, "webhook-signature": signature, ...options.headers },
  });
}
