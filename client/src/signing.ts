/**
 * Request signing exactly as the service's docs define it (docs/signing.md):
 * `payload = timestamp + "\n" + METHOD + "\n" + requestTarget + "\n" + body`, and the signature
 * is the lowercase hex HMAC-SHA256 of it under the API secret. Web Crypto only, so it runs in
 * Node, browsers, Workers, Deno and Bun alike.
 */
export interface SigningInput {
  /** Unix ms, sent as `X-TIMESTAMP`. */
  timestamp: number;
  method: string;
  /** Path plus `?` and the query, exactly as sent. */
  requestTarget: string;
  /** The raw body; empty for GET. */
  body?: string;
}

const encoder = new TextEncoder();

/** The text that is signed. */
export function signaturePayload({ timestamp, method, requestTarget, body = "" }: SigningInput): string {
  return `${timestamp}\n${method.toUpperCase()}\n${requestTarget}\n${body}`;
}

/** Imported HMAC keys by secret: importing costs more than signing. */
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keys.set(secret, key);
  }
  return key;
}

/**
 * `X-SIGNATURE` for a request.
 *
 * @example
 * await sign("s3cr3t", { timestamp: 1763800000000, method: "GET", requestTarget: "/v1/ticker/24hr?symbol=BTCUSDT" })
 * // "3972dcf3bf644f66821f89d7090483079f6d77fd6164aa484aa0c3d8bb40e57e"
 */
export async function sign(secret: string, input: SigningInput): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(signaturePayload(input)));
  let hex = "";
  for (const byte of new Uint8Array(mac)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
