import { type AuditContext, auditStatement } from "../audit/audit-log";
import { randomId } from "../core/encoding";
import { problem } from "../core/problem";
import { seal, unseal } from "../core/seal";
import { newGatewaySecret } from "./webhook-signature";

/** Approved gateways and their secrets (at most two active, for rotation), sealed in D1. */
const MAX_ACTIVE_SECRETS = 2;

/** An operator-chosen gateway id: what `X-GATEWAY-ID` and the callback body's `gatewayId` accept, at most 64 characters. */
export const GATEWAY_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
export const GATEWAY_ID_RULE = "1–64 letters, digits and _ . : -, starting with a letter or digit";

export interface GatewayView {
  id: string;
  name: string;
  status: "active" | "revoked";
  createdAt: number;
  revokedAt: number | null;
  secrets: { id: string; status: "active" | "retired"; createdAt: number; retiredAt: number | null }[];
}

/**
 * A new secret and the statement that stores it sealed (the secret's id is the associated
 * data). The insert itself checks that the gateway is active and below its active secrets, so
 * concurrent rotations cannot make a third one; it changes no row when the check fails.
 */
async function addSecret(env: Env, gatewayId: string, now: number): Promise<{ id: string; secret: string; statement: D1PreparedStatement }> {
  const id = randomId("whk", 8);
  const secret = newGatewaySecret();
  const statement = env.DB.prepare(
    `INSERT INTO gateway_secrets (id, gateway_id, sealed_secret, status, created_at)
     SELECT ?1, ?2, ?3, 'active', ?4
     WHERE (SELECT COUNT(*) FROM gateway_secrets WHERE gateway_id = ?2 AND status = 'active') < ?5
       AND EXISTS (SELECT 1 FROM gateways WHERE id = ?2 AND status = 'active')`,
  ).bind(id, gatewayId, await seal(env.SEALING_KEY, secret, id), now, MAX_ACTIVE_SECRETS);
  return { id, secret, statement };
}

/** Approves a gateway; its first secret is in this answer and never again. */
export async function approveGateway(
  env: Env,
  name: string,
  chosenId: string | undefined,
  audit: AuditContext,
): Promise<GatewayView & { secret: { id: string; secret: string } }> {
  const now = audit.at;
  const id = chosenId ?? randomId("gw", 8);
  const taken = () => problem("ALREADY_EXISTS", `a gateway ${id} exists already; choose another id`, { errors: [{ path: "body.id", message: "is in use" }] });
  if (await env.DB.prepare("SELECT 1 FROM gateways WHERE id = ?").bind(id).first()) throw taken();
  const secret = await addSecret(env, id, now);
  try {
    // One transaction: a concurrent approval of the same id fails the insert, and with it the secret.
    await env.DB.batch([
      env.DB.prepare("INSERT INTO gateways (id, name, status, created_at) VALUES (?, ?, 'active', ?)").bind(id, name, now),
      secret.statement,
      auditStatement(env.DB, audit, "gateway.approve", id, { name, secretId: secret.id }),
    ]);
  } catch (error) {
    if (String(error).includes("UNIQUE")) throw taken();
    throw error;
  }
  return { ...(await readGateway(env, id)), secret: { id: secret.id, secret: secret.secret } };
}

export async function readGateway(env: Env, gatewayId: string): Promise<GatewayView> {
  const gateway = await env.DB.prepare("SELECT * FROM gateways WHERE id = ?")
    .bind(gatewayId)
    .first<{ id: string; name: string; status: "active" | "revoked"; created_at: number; revoked_at: number | null }>();
  if (!gateway) throw problem("NOT_FOUND", `no gateway ${gatewayId.slice(0, 40)}`);
  const { results } = await env.DB.prepare("SELECT id, status, created_at, retired_at FROM gateway_secrets WHERE gateway_id = ? ORDER BY created_at")
    .bind(gatewayId)
    .all<{
      id: string;
      status: "active" | "retired";
      created_at: number;
      retired_at: number | null;
    }>();
  return {
    id: gateway.id,
    name: gateway.name,
    status: gateway.status,
    createdAt: gateway.created_at,
    revokedAt: gateway.revoked_at,
    secrets: results.map((s) => ({ id: s.id, status: s.status, createdAt: s.created_at, retiredAt: s.retired_at })),
  };
}

export async function listGateways(env: Env): Promise<GatewayView[]> {
  const { results } = await env.DB.prepare("SELECT id FROM gateways ORDER BY created_at").all<{ id: string }>();
  return Promise.all(results.map((g) => readGateway(env, g.id)));
}

/** Rotation: adds a second active secret; the old one keeps working until it is retired. */
export async function rotateSecret(env: Env, gatewayId: string, audit: AuditContext): Promise<{ id: string; secret: string }> {
  const gateway = await readGateway(env, gatewayId);
  if (gateway.status !== "active") throw problem("NOT_FOUND", `gateway ${gatewayId} is revoked`);
  const { id, secret, statement } = await addSecret(env, gatewayId, audit.at);
  const [result] = await env.DB.batch([statement, auditStatement(env.DB, audit, "gateway.secret.add", gatewayId, { secretId: id }, true)]);
  if (result!.meta.changes === 0) {
    throw problem("VALIDATION_FAILED", `a gateway has at most ${MAX_ACTIVE_SECRETS} active secrets; retire one first`, {
      errors: [{ path: "secrets", message: `at most ${MAX_ACTIVE_SECRETS} active` }],
    });
  }
  return { id, secret };
}

export async function retireSecret(env: Env, gatewayId: string, secretId: string, audit: AuditContext): Promise<void> {
  const [result] = await env.DB.batch([
    env.DB.prepare("UPDATE gateway_secrets SET status = 'retired', retired_at = ? WHERE id = ? AND gateway_id = ? AND status = 'active'").bind(
      audit.at,
      secretId,
      gatewayId,
    ),
    auditStatement(env.DB, audit, "gateway.secret.retire", gatewayId, { secretId }, true),
  ]);
  if (result!.meta.changes === 0) throw problem("NOT_FOUND", `no active secret ${secretId.slice(0, 40)} on gateway ${gatewayId.slice(0, 40)}`);
}

export async function revokeGateway(env: Env, gatewayId: string, audit: AuditContext): Promise<void> {
  const [result] = await env.DB.batch([
    env.DB.prepare("UPDATE gateways SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'").bind(audit.at, gatewayId),
    auditStatement(env.DB, audit, "gateway.revoke", gatewayId, {}, true),
  ]);
  if (result!.meta.changes === 0) throw problem("NOT_FOUND", `no active gateway ${gatewayId.slice(0, 40)}`);
}

/** The active secrets of an active gateway, unsealed; null when the gateway is unknown or revoked. */
export async function activeSecrets(env: Env, gatewayId: string): Promise<string[] | null> {
  const { results } = await env.DB.prepare(
    "SELECT s.id, s.sealed_secret FROM gateways g JOIN gateway_secrets s ON s.gateway_id = g.id WHERE g.id = ? AND g.status = 'active' AND s.status = 'active'",
  )
    .bind(gatewayId)
    .all<{ id: string; sealed_secret: string }>();
  if (results.length === 0) return null;
  return Promise.all(results.map((s) => unseal(env.SEALING_KEY, s.sealed_secret, s.id)));
}
