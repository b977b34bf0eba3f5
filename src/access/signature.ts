import { fromHex, toHex } from "../core/encoding";

/**
 * Request signatures (docs/signing.md):
 * `payload = X-TIMESTAMP + "\n" + METHOD + "\n" + requestTarget + "\n" + body`,
 * signature = hex of HMAC-SHA256 keyed by the API secret's UTF-8 bytes. Verified with
 * `crypto.subtle.verify`, which compares in constant time.
 */
const encoder = new TextEncoder();

/** The signed text: the official client's own definition, so the guard and the client cannot drift. */
export { signaturePayload } from "../../client/src/signing";

export function importSecret(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

export const SIGNATURE_PATTERN = /^[0-9a-fA-F]{64}$/;
/** `X-TIMESTAMP` as accepted (docs/signing.md): Unix ms, digits without leading zeros. */
export const TIMESTAMP_PATTERN = /^[1-9]\d{0,15}$/;

/** True when `signatureHex` (either case) is the HMAC of `payload` under `key`. */
export async function verifySignature(key: CryptoKey, payload: string, signatureHex: string): Promise<boolean> {
  if (!SIGNATURE_PATTERN.test(signatureHex)) return false;
  return crypto.subtle.verify("HMAC", key, fromHex(signatureHex), encoder.encode(payload));
}

export async function sign(secret: string, payload: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await importSecret(secret), encoder.encode(payload));
  return toHex(mac);
}

/** The path plus `?` and the query exactly as sent: the part of the URL after the origin. */
export function requestTargetOf(url: string): string {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const target = pathStart === -1 ? "/" : url.slice(pathStart);
  const hash = target.indexOf("#");
  return hash === -1 ? target : target.slice(0, hash);
}

/** A signed request may be at most this far ahead of the server clock (docs/signing.md). */
export const FUTURE_TOLERANCE_MS = 1_000;

/** On time when `serverTime − recvWindow ≤ timestamp ≤ serverTime + 1000`, both ends inclusive. */
export function isOnTime(timestamp: number, serverTime: number, recvWindow: number): boolean {
  return timestamp >= serverTime - recvWindow && timestamp <= serverTime + FUTURE_TOLERANCE_MS;
}
