import { randomBase64Url, randomHex } from "../core/encoding";
import { problem } from "../core/problem";
import type { MarketGrant } from "../domain/market-config";

/** API keys: ids, permissions and the record an AccessGuard holds for its key. */
const PERMISSIONS = ["read", "stream", "publish"] as const;
export type Permission = (typeof PERMISSIONS)[number];
/** What an account may give its own keys: publishing is granted by the operator only (docs/security.md). */
export const ACCOUNT_PERMISSIONS = ["read", "stream"] as const;
export type AccountPermission = (typeof ACCOUNT_PERMISSIONS)[number];

/** Account keys are `mk_…`, the operator's publishing keys `pk_…`; both sign the same way. */
export const KEY_ID_PATTERN = /^(mk|pk)_[0-9a-f]{24}$/;
export const KEY_ID_RULE = "mk_ or pk_ and 24 hex digits";

export const MAX_ACTIVE_KEYS = 20;

/** What the guard stores; the secret only sealed (AES-256-GCM, the key id as associated data). */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  sealedSecret: string;
  permissions: Permission[];
  allowCidrs: string[];
  expiresAt: number | null;
  createdAt: number;
  revokedAt: number | null;
  /** Set on an operator's publishing key only: the markets it may write. Without it a key never publishes. */
  markets?: MarketGrant;
}

/** A key's state at `now`: what every list, guard and open connection derives the same way. */
export type KeyState = "active" | "revoked" | "expired";

export function keyStateAt(key: { revokedAt: number | null; expiresAt: number | null }, now: number): KeyState {
  if (key.revokedAt !== null) return "revoked";
  return key.expiresAt !== null && key.expiresAt <= now ? "expired" : "active";
}

/** A new key's expiry (or a changed one) must lie ahead: 400 naming `body.expiresAt` otherwise. */
export function requireFutureExpiry(expiresAt: number | null | undefined, now: number): void {
  if (expiresAt != null && expiresAt <= now) {
    throw problem("VALIDATION_FAILED", "expiresAt must be in the future", { errors: [{ path: "body.expiresAt", message: "is in the past" }] });
  }
}

export function newKeyId(kind: "account" | "publish" = "account"): string {
  return `${kind === "publish" ? "pk" : "mk"}_${randomHex(12)}`;
}

/** 32 random bytes, base64url: what the account holder signs with. */
export function newKeySecret(): string {
  return randomBase64Url(32);
}

/**
 * An account key's requests are checked and counted by its gate (docs/limits.md#key-gates); a
 * publishing key's by its guard, and so is publishing with any key (its own window, its markets).
 */
export function isGatedKey(keyId: string, permission?: Permission): boolean {
  return keyId.startsWith("mk_") && permission !== "publish";
}

export function principalOfKey(keyId: string): string {
  return `key:${keyId}`;
}
