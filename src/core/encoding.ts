/** Byte encodings the service needs, each written once. */

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array | ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase hex of the SHA-256 digest of `data` (bytes, or text as UTF-8). */
export async function sha256Hex(data: Uint8Array<ArrayBuffer> | string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? new TextEncoder().encode(data) : data));
}
