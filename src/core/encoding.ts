/**
 * Byte encodings and random identifiers, each written once: hex, base64, base64url.
 *
 * @example
 * toHex(new Uint8Array([1, 171]))          // "01ab"
 * toBase64Url(new TextEncoder().encode("?")) // "Pw"
 * randomId("gw", 8)                         // "gw_3f9a…" (16 hex digits)
 */

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array | ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Bytes of a hex string of even length (either case); the caller has checked its form. */
export function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** Standard base64 (with padding). Built a byte at a time: spreading a large array into `fromCharCode` can overflow the stack. */
export function toBase64(bytes: Uint8Array | ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Bytes of standard base64; throws on text that is not base64. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** base64url without padding (RFC 4648 §5): safe in URLs, cookies and query strings as it is. */
export function toBase64Url(bytes: Uint8Array | ArrayBuffer): string {
  return toBase64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Bytes of base64url, with or without padding; throws on text that is not base64url. */
export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  return fromBase64(text.replaceAll("-", "+").replaceAll("_", "/"));
}

/** `bytes` random bytes as hex. */
export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** `bytes` random bytes as base64url: session ids, API secrets, CSRF tokens. */
export function randomBase64Url(bytes: number): string {
  return toBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** An identifier with a readable prefix and `bytes` random bytes: `acct_…`, `gw_…`, `whk_…`. */
export function randomId(prefix: string, bytes: number): string {
  return `${prefix}_${randomHex(bytes)}`;
}

/** Lowercase hex of the SHA-256 digest of `data` (bytes, or text as UTF-8). */
export async function sha256Hex(data: Uint8Array<ArrayBuffer> | string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? new TextEncoder().encode(data) : data));
}

/** Text gzipped (R2 objects written once and read whole: the archive's chunks, the book's segments). */
export function gzipText(text: string): Promise<ArrayBuffer> {
  return new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();
}

/** The text of a gzipped body. */
export function gunzipText(body: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(body.pipeThrough(new DecompressionStream("gzip"))).text();
}

/** The byte arrays one after another, in one. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
