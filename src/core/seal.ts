import { fromBase64, toBase64 } from "./encoding";
import { problem } from "./problem";

/**
 * Sealing of secrets at rest (API key secrets, gateway secrets) with AES-256-GCM under the
 * Worker secret `SEALING_KEY` (base64 of 32 bytes). A sealed value is
 * `v1.<base64 iv>.<base64 ciphertext+tag>`; the version prefix leaves room for key rotation.
 */
const keyCache = new Map<string, Promise<CryptoKey>>();

function importKey(sealingKey: string | undefined): Promise<CryptoKey> {
  if (!sealingKey) throw problem("NOT_CONFIGURED", "SEALING_KEY is not set: set it with `wrangler secret put SEALING_KEY`");
  let key = keyCache.get(sealingKey);
  if (!key) {
    const raw = fromBase64(sealingKey);
    if (raw.length !== 32) throw problem("NOT_CONFIGURED", "SEALING_KEY must be base64 of exactly 32 bytes");
    key = crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
    keyCache.set(sealingKey, key);
  }
  return key;
}

export async function seal(sealingKey: string | undefined, plaintext: string, associatedData = ""): Promise<string> {
  const key = await importKey(sealingKey);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(associatedData) },
    key,
    new TextEncoder().encode(plaintext),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(ciphertext))}`;
}

/** Opens a sealed value; `associatedData` must match what it was sealed with (e.g. the key id). */
export async function unseal(sealingKey: string | undefined, sealed: string, associatedData = ""): Promise<string> {
  const key = await importKey(sealingKey);
  const [version, iv, ciphertext] = sealed.split(".");
  if (version !== "v1" || !iv || !ciphertext) throw new Error("not a sealed value");
  const plaintext = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv), additionalData: new TextEncoder().encode(associatedData) },
    key,
    fromBase64(ciphertext),
  );
  return new TextDecoder().decode(plaintext);
}
