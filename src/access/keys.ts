import { randomBase64Url, randomHex } from "../core/encoding";

/** API keys: ids, permissions and the record an AccessGuard holds for its key. */
export const PERMISSIONS = ["read", "stream", "publish"] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const KEY_ID_PATTERN = /^mk_[0-9a-f]{24}$/;
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
}

export function newKeyId(): string {
  return `mk_${randomHex(12)}`;
}

/** 32 random bytes, base64url: what the account holder signs with. */
export function newKeySecret(): string {
  return randomBase64Url(32);
}

export function principalOfKey(keyId: string): string {
  return `key:${keyId}`;
}
