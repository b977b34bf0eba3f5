import { fromBase64, toBase64 } from "../core/encoding";
import { problem } from "../core/problem";

/** PBKDF2-SHA256 via Web Crypto, 100,000 iterations (the Workers maximum), 16-byte salt. */
const PBKDF2_ITERATIONS = 100_000;
const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 128;

const COMMON = new Set(["password12", "1234567890", "qwertyuiop", "password123", "iloveyou12", "passw0rd12", "0123456789", "abcdefghij"]);

/** Refuses weak or oversized passwords with 400 `VALIDATION_FAILED`. */
export function checkPasswordPolicy(password: string): void {
  const fail = (message: string) => {
    throw problem("VALIDATION_FAILED", message, { errors: [{ path: "body.password", message }] });
  };
  if (password.length > MAX_PASSWORD_LENGTH) fail(`a password is at most ${MAX_PASSWORD_LENGTH} characters`);
  if (password.length < MIN_PASSWORD_LENGTH) fail(`a password has at least ${MIN_PASSWORD_LENGTH} characters`);
  if (new Set(password).size < 4 || COMMON.has(password.toLowerCase())) fail("this password is too easy to guess");
}

async function derive(password: string, salt: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations: PBKDF2_ITERATIONS }, material, 256));
}

export async function hashPassword(password: string): Promise<{ hash: string; salt: string }> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return { hash: toBase64(await derive(password, salt)), salt: toBase64(salt) };
}

export async function verifyPassword(password: string, hash: string, salt: string): Promise<boolean> {
  const derived = await derive(password, fromBase64(salt));
  const expected = fromBase64(hash);
  return derived.length === expected.length && crypto.subtle.timingSafeEqual(derived, expected);
}
