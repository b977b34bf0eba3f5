import { fromBase64, toBase64 } from "../core/encoding";

/**
 * Standard Webhooks signatures (docs/settlements.md): `v1,<base64 HMAC-SHA256(secret,
 * id + "." + timestamp + "." + rawBody)>`, space-separated when several secrets are active.
 * A secret is `whsec_` + base64 of the key bytes.
 */
const TIMESTAMP_TOLERANCE_SECONDS = 300;
const SECRET_PREFIX = "whsec_";

export function newGatewaySecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return SECRET_PREFIX + toBase64(bytes);
}

function secretKeyBytes(secret: string): Uint8Array<ArrayBuffer> {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("a gateway secret starts with whsec_");
  return fromBase64(secret.slice(SECRET_PREFIX.length));
}

/** The bytes that are signed: id, timestamp and the raw body, joined by dots. */
export function signedContent(webhookId: string, timestamp: string, rawBody: Uint8Array): Uint8Array<ArrayBuffer> {
  const prefix = new TextEncoder().encode(`${webhookId}.${timestamp}.`);
  const content = new Uint8Array(prefix.length + rawBody.length);
  content.set(prefix);
  content.set(rawBody, prefix.length);
  return content;
}

/** More than a gateway with two secrets ever sends; bounds the work one request can cause. */
export const MAX_SIGNATURES = 8;

/** The `v1` signatures of the header, decoded; anything else in the list is ignored. */
export function parseSignatureHeader(header: string): Uint8Array<ArrayBuffer>[] {
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const entry of header.trim().split(/\s+/).slice(0, MAX_SIGNATURES)) {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value || !/^[A-Za-z0-9+/]{43}=$/.test(value)) continue;
    signatures.push(fromBase64(value));
  }
  return signatures;
}

export function isTimestampFresh(timestampSeconds: number, nowMs: number): boolean {
  return Math.abs(Math.floor(nowMs / 1000) - timestampSeconds) <= TIMESTAMP_TOLERANCE_SECONDS;
}

/** True when any listed signature matches any of the secrets (compared in constant time). */
export async function verifyWebhook(secrets: readonly string[], webhookId: string, timestamp: string, rawBody: Uint8Array, header: string): Promise<boolean> {
  const signatures = parseSignatureHeader(header);
  if (signatures.length === 0) return false;
  const content = signedContent(webhookId, timestamp, rawBody);
  for (const secret of secrets) {
    const key = await crypto.subtle.importKey("raw", secretKeyBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    for (const signature of signatures) {
      if (await crypto.subtle.verify("HMAC", key, signature, content)) return true;
    }
  }
  return false;
}

/** Signs like a gateway does (the simulator and the tests use it). */
export async function signWebhook(secret: string, webhookId: string, timestamp: string, rawBody: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", secretKeyBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signedContent(webhookId, timestamp, rawBody)));
  return `v1,${toBase64(mac)}`;
}
