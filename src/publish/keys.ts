import type { KeyAmendment } from "../access/access-guard";
import { keyLastUse, keysLastUse } from "../access/key-usage-reads";
import { KEY_ID_PATTERN, type KeyRecord, keyStateAt, newKeyId, newKeySecret, principalOfKey, requireFutureExpiry } from "../access/keys";
import { type AuditContext, auditStatement } from "../audit/audit-log";
import { accessGuard, publishChannel } from "../core/object-ids";
import { type FieldError, problem } from "../core/problem";
import { seal } from "../core/seal";
import { parseSymbol } from "../core/symbols";
import type { MarketGrant } from "../domain/market-config";
import { logFailure } from "../logs/log";
import { listedMarket } from "../market/lookup";
import { readRegistry } from "../registry/store";
import type { PublishKeyView } from "./key-schemas";

/**
 * Publishing keys (docs/operations.md#publish-keys): issued by the operator, each limited to its
 * markets. D1 holds the index the operator lists and the audit record; the key's AccessGuard
 * holds the sealed secret and the grant every batch is held to.
 */

export interface NewPublishKey {
  label: string;
  markets: MarketGrant;
  allowIps: string[];
  expiresAt: number | null;
}

/** The operator's identity on a publishing key's guard record (it belongs to no account). */
const OPERATOR_ACCOUNT = "operator";

type Row = {
  id: string;
  label: string;
  markets: string;
  allow_cidrs: string;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
  revoked_at: number | null;
};

function viewOf(row: Row, now: number, lastUsedAt: number | null): PublishKeyView {
  return {
    id: row.id,
    label: row.label,
    markets: JSON.parse(row.markets) as MarketGrant,
    allowIps: JSON.parse(row.allow_cidrs) as string[],
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revokedAt: row.revoked_at,
    lastUsedAt,
    status: keyStateAt({ revokedAt: row.revoked_at, expiresAt: row.expires_at }, now),
  };
}

/**
 * The markets as canonical symbols of listed, not delisted markets; every other entry is named
 * (400). `"*"` stays `"*"`: every market, present and future.
 */
async function canonicalMarkets(db: D1Database, markets: MarketGrant, path: string): Promise<MarketGrant> {
  if (markets === "*") return markets;
  const listed = new Map((await readRegistry(db)).markets.map((m) => [m.symbol, m]));
  const errors: FieldError[] = [];
  const symbols = markets.map((raw, i) => {
    const parsed = parseSymbol(raw);
    // The system of record, not this isolate's copy: a market listed a moment ago can be granted.
    const market = parsed && listedMarket(parsed, (symbol) => listed.get(symbol));
    if (!market) {
      errors.push({ path: `${path}.${i}`, message: `${raw.slice(0, 40)} is not a listed market` });
    } else if (market.status === "DELISTED") errors.push({ path: `${path}.${i}`, message: `${market.symbol} is delisted` });
    return market?.symbol ?? "";
  });
  if (errors.length > 0) throw problem("VALIDATION_FAILED", "some markets cannot be granted", { errors });
  return [...new Set(symbols)];
}

/** Issues a key: its guard first (so a listed key always works), then the index with its audit record. The secret is returned once. */
export async function issuePublishKey(env: Env, input: NewPublishKey, audit: AuditContext): Promise<PublishKeyView & { secret: string }> {
  const now = audit.at;
  requireFutureExpiry(input.expiresAt, now);
  const markets = await canonicalMarkets(env.DB, input.markets, "body.markets");
  const keyId = newKeyId("publish");
  const secret = newKeySecret();
  const record: KeyRecord = {
    keyId,
    accountId: OPERATOR_ACCOUNT,
    sealedSecret: await seal(env.SEALING_KEY, secret, keyId),
    // Public market data is readable by anyone; a feed handler may read it signed with the same key.
    permissions: ["read", "publish"],
    allowCidrs: input.allowIps,
    expiresAt: input.expiresAt,
    createdAt: now,
    revokedAt: null,
    markets,
  };
  const guard = accessGuard(env, principalOfKey(keyId));
  await guard.installKey(record);
  const view = { label: input.label, markets, allowIps: input.allowIps, expiresAt: input.expiresAt };
  try {
    await env.DB.batch([
      env.DB.prepare("INSERT INTO publish_keys (id, label, markets, allow_cidrs, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)").bind(
        keyId,
        input.label,
        JSON.stringify(markets),
        JSON.stringify(input.allowIps),
        input.expiresAt,
        now,
        now,
      ),
      auditStatement(env.DB, audit, "publishKey.issue", keyId, view),
    ]);
  } catch (error) {
    await guard.revokeKey(now);
    throw error;
  }
  return { id: keyId, ...view, createdAt: now, updatedAt: now, revokedAt: null, lastUsedAt: null, status: "active", secret };
}

async function readRow(db: D1Database, keyId: string): Promise<Row> {
  const row = KEY_ID_PATTERN.test(keyId) ? await db.prepare("SELECT * FROM publish_keys WHERE id = ?").bind(keyId).first<Row>() : null;
  if (!row) throw problem("NOT_FOUND", `no publishing key ${keyId.slice(0, 40)}`);
  return row;
}

export async function listPublishKeys(env: Env, now = Date.now()): Promise<PublishKeyView[]> {
  const { results } = await env.DB.prepare("SELECT * FROM publish_keys ORDER BY created_at DESC").all<Row>();
  const lastUses = await keysLastUse(
    env,
    results.map((row) => row.id),
  );
  return results.map((row, i) => viewOf(row, now, lastUses[i]!));
}

/** Open publisher channels re-check the key now (they would within their check interval anyway). */
async function tellChannels(env: Env, keyId: string): Promise<void> {
  try {
    await publishChannel(env, principalOfKey(keyId)).recheck();
  } catch (error) {
    logFailure("publisher channel recheck failed; its own check comes within 10 s", { error });
  }
}

/**
 * Changes a key's markets, allow-list or expiry: recorded first (the index and the audit record in
 * one batch), then put in force at the key's guard; open channels take it up within 10 s, and at
 * once when they can be told. If the guard cannot be reached the answer is 503: send it again.
 */
export async function amendPublishKey(
  env: Env,
  keyId: string,
  change: { markets?: MarketGrant; allowIps?: string[]; expiresAt?: number | null },
  audit: AuditContext,
): Promise<PublishKeyView> {
  const row = await readRow(env.DB, keyId);
  if (row.revoked_at !== null) throw problem("ALREADY_EXISTS", `${keyId} is revoked; issue a new key`);
  requireFutureExpiry(change.expiresAt, audit.at);
  const amendment: KeyAmendment = {};
  if (change.markets !== undefined) amendment.markets = await canonicalMarkets(env.DB, change.markets, "body.markets");
  if (change.allowIps !== undefined) amendment.allowCidrs = change.allowIps;
  if (change.expiresAt !== undefined) amendment.expiresAt = change.expiresAt;
  const next: Row = {
    ...row,
    markets: amendment.markets === undefined ? row.markets : JSON.stringify(amendment.markets),
    allow_cidrs: amendment.allowCidrs === undefined ? row.allow_cidrs : JSON.stringify(amendment.allowCidrs),
    expires_at: amendment.expiresAt === undefined ? row.expires_at : amendment.expiresAt,
    updated_at: audit.at,
  };
  await env.DB.batch([
    env.DB.prepare("UPDATE publish_keys SET markets = ?, allow_cidrs = ?, expires_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL").bind(
      next.markets,
      next.allow_cidrs,
      next.expires_at,
      next.updated_at,
      keyId,
    ),
    auditStatement(env.DB, audit, "publishKey.amend", keyId, { ...change, ...(amendment.markets !== undefined && { markets: amendment.markets }) }, true),
  ]);
  try {
    await accessGuard(env, principalOfKey(keyId)).amendKey(amendment);
  } catch {
    throw problem("UNAVAILABLE", "the change is recorded but the key's guard did not answer; send it again", {}, { "Retry-After": "1" });
  }
  await tellChannels(env, keyId);
  return viewOf(next, audit.at, await keyLastUse(env, next.id));
}

/** Revokes: recorded first, then at the guard, so the very next request fails; open channels close at once or within 10 s. */
export async function revokePublishKey(env: Env, keyId: string, audit: AuditContext): Promise<void> {
  const row = await readRow(env.DB, keyId);
  if (row.revoked_at === null) {
    await env.DB.batch([
      env.DB.prepare("UPDATE publish_keys SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL").bind(audit.at, audit.at, keyId),
      auditStatement(env.DB, audit, "publishKey.revoke", keyId, { label: row.label }, true),
    ]);
  }
  // Repeated on a resend too: a guard that missed the first revocation takes it now.
  try {
    await accessGuard(env, principalOfKey(keyId)).revokeKey(audit.at);
  } catch {
    throw problem("UNAVAILABLE", "the revocation is recorded but the key's guard did not answer; send it again", {}, { "Retry-After": "1" });
  }
  await tellChannels(env, keyId);
}
