import { ipPrincipal } from "../access/client-address";
import type { UsageInterval } from "../access/key-usage";
import { keysLastUse, keyUsageOf } from "../access/key-usage-reads";
import {
  type AccountPermission,
  KEY_ID_PATTERN,
  type KeyRecord,
  type KeyState,
  keyStateAt,
  MAX_ACTIVE_KEYS,
  newKeyId,
  newKeySecret,
  principalOfKey,
  requireFutureExpiry,
} from "../access/keys";
import { randomId } from "../core/encoding";
import { accessGuard } from "../core/object-ids";
import { problem } from "../core/problem";
import { seal } from "../core/seal";
import { checkPasswordPolicy, hashPassword, verifyPassword } from "./passwords";

/**
 * Accounts and API keys, shared by the JSON API and the dashboard. D1 holds the account and
 * the key index; the key's secret exists only sealed inside its AccessGuard.
 */
export interface ApiKeyView {
  id: string;
  label: string;
  permissions: AccountPermission[];
  allowCidrs: string[];
  expiresAt: number | null;
  createdAt: number;
  lastUsedAt: number | null;
  status: KeyState;
}

export interface NewApiKey {
  label: string;
  permissions: AccountPermission[];
  allowCidrs: string[];
  expiresAt: number | null;
}

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function signUp(env: Env, email: string, password: string, now = Date.now()): Promise<{ id: string; email: string; createdAt: number }> {
  checkPasswordPolicy(password);
  const normalized = normalizeEmail(email);
  const { hash, salt } = await hashPassword(password);
  const id = randomId("acct", 12);
  const inserted = await env.DB.prepare(
    "INSERT INTO accounts (id, email, password_hash, password_salt, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (email) DO NOTHING",
  )
    .bind(id, normalized, hash, salt, now)
    .run();
  if (inserted.meta.changes === 0) {
    throw problem("VALIDATION_FAILED", "an account with this email exists; sign in instead", {
      errors: [{ path: "body.email", message: "is already registered" }],
    });
  }
  return { id, email: normalized, createdAt: now };
}

function tooManySignIns(retryAfterMs: number) {
  return problem(
    "RATE_LIMITED",
    "too many failed sign-ins; try again later",
    { retryAfterMs },
    { "Retry-After": String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  );
}

/**
 * Checks the password, throttled per account and per client address (`access/login-throttle.ts`):
 * an attempt is reserved with both guards before the password is checked, so no more checks
 * happen than the throttle allows however many attempts arrive at once.
 */
export async function signIn(env: Env, email: string, password: string, ip: string): Promise<{ id: string; email: string }> {
  const normalized = normalizeEmail(email);
  const ipGuard = accessGuard(env, ipPrincipal(ip));
  const accountGuard = accessGuard(env, `login:${normalized}`);
  const byIp = await ipGuard.reserveLogin("ip");
  if (!byIp.allowed) throw tooManySignIns(byIp.retryAfterMs);
  const byAccount = await accountGuard.reserveLogin("account");
  if (!byAccount.allowed) {
    await ipGuard.settleLogin("ip", "released");
    throw tooManySignIns(byAccount.retryAfterMs);
  }
  const account = await env.DB.prepare("SELECT id, password_hash, password_salt FROM accounts WHERE email = ?")
    .bind(normalized)
    .first<{ id: string; password_hash: string; password_salt: string }>();
  // Without an account, hash anyway: the answer takes as long either way.
  let valid = false;
  if (account) valid = password.length <= 1024 && (await verifyPassword(password, account.password_hash, account.password_salt));
  else await hashPassword(password.slice(0, 1024));
  // A failure stays counted (its reservation was one); a success gives both back.
  if (!account || !valid) throw problem("UNAUTHENTICATED", "wrong email or password");
  await Promise.all([accountGuard.settleLogin("account", "success"), ipGuard.settleLogin("ip", "success")]);
  return { id: account.id, email: normalized };
}

/** The guard that holds an API key's record. */
function keyGuard(env: Env, keyId: string) {
  return accessGuard(env, principalOfKey(keyId));
}

/** Creates a key: its guard first (so a listed key always works), then the index. The secret is returned once. */
export async function createApiKey(env: Env, accountId: string, input: NewApiKey, now = Date.now()): Promise<ApiKeyView & { secret: string }> {
  requireFutureExpiry(input.expiresAt, now);
  const active = await env.DB.prepare(
    "SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
  )
    .bind(accountId, now)
    .first<{ n: number }>();
  if ((active?.n ?? 0) >= MAX_ACTIVE_KEYS) {
    throw problem("VALIDATION_FAILED", `an account has at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`);
  }
  const keyId = newKeyId();
  const secret = newKeySecret();
  const record: KeyRecord = {
    keyId,
    accountId,
    sealedSecret: await seal(env.SEALING_KEY, secret, keyId),
    permissions: input.permissions,
    allowCidrs: input.allowCidrs,
    expiresAt: input.expiresAt,
    createdAt: now,
    revokedAt: null,
  };
  await keyGuard(env, keyId).installKey(record);
  try {
    await env.DB.prepare("INSERT INTO api_keys (id, account_id, label, permissions, allow_cidrs, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(keyId, accountId, input.label, input.permissions.join(","), JSON.stringify(input.allowCidrs), input.expiresAt, now)
      .run();
  } catch (error) {
    await keyGuard(env, keyId).revokeKey(now);
    throw error;
  }
  return { id: keyId, ...input, createdAt: now, lastUsedAt: null, status: "active", secret };
}

interface KeyRow {
  id: string;
  label: string;
  permissions: string;
  allow_cidrs: string;
  expires_at: number | null;
  created_at: number;
  revoked_at: number | null;
}

/** Every key of the account, newest first, with its last use; never a secret. */
export async function listApiKeys(env: Env, accountId: string, now = Date.now()): Promise<ApiKeyView[]> {
  const { results } = await env.DB.prepare("SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at DESC").bind(accountId).all<KeyRow>();
  const lastUses = await keysLastUse(
    env,
    results.map((row) => row.id),
  );
  return results.map((row, i) => ({
    id: row.id,
    label: row.label,
    permissions: row.permissions.split(",").filter(Boolean) as AccountPermission[],
    allowCidrs: JSON.parse(row.allow_cidrs) as string[],
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    lastUsedAt: lastUses[i]!,
    status: keyStateAt({ revokedAt: row.revoked_at, expiresAt: row.expires_at }, now),
  }));
}

/** A key of this account, or 404: another account's key is not found, as if it did not exist. */
async function requireOwnKey(env: Env, accountId: string, keyId: string): Promise<void> {
  const owned = KEY_ID_PATTERN.test(keyId)
    ? await env.DB.prepare("SELECT id FROM api_keys WHERE id = ? AND account_id = ?").bind(keyId, accountId).first()
    : null;
  if (!owned) throw problem("NOT_FOUND", `no API key ${keyId.slice(0, 40)} in this account`);
}

/** A key's usage per minute or hour, as its ledger counts it; a key of another account is not found. */
export async function keyUsage(env: Env, accountId: string, keyId: string, interval: UsageInterval, since?: number) {
  await requireOwnKey(env, accountId, keyId);
  return { keyId, interval, buckets: await keyUsageOf(env, keyId, interval, since) };
}

/**
 * Revokes at the guard first, which tells the key's gate, so the very next request with the key
 * fails; then the index. A gate not reached is 503: the key stays listed as active until a retry
 * reaches it (docs/limits.md#key-gates).
 */
export async function revokeApiKey(env: Env, accountId: string, keyId: string, now = Date.now()): Promise<void> {
  await requireOwnKey(env, accountId, keyId);
  if (!(await keyGuard(env, keyId).revokeKey(now)))
    throw problem("UNAVAILABLE", "the key is revoked at its guard, but its gate was not reached; revoke it again shortly", {}, { "Retry-After": "1" });
  await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").bind(now, keyId).run();
}
