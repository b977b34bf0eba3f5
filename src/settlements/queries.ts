import { problem } from "../core/problem";
import type { SettlementStatus } from "./state-machine";

/** Operator reads of settlements: filtered, cursor-paginated, with history and events. */
interface SettlementRow {
  id: string;
  gateway_id: string;
  status: SettlementStatus;
  sequence: number;
  chain: string | null;
  asset: string | null;
  amount: string | null;
  fee: string | null;
  tx_hash: string | null;
  block_number: number | null;
  confirmations: number | null;
  required_confirmations: number | null;
  from_address: string | null;
  to_address: string | null;
  reference: string | null;
  created_at: number;
  updated_at: number;
}

function toSettlement(row: SettlementRow) {
  return {
    id: row.id,
    gatewayId: row.gateway_id,
    status: row.status,
    sequence: row.sequence,
    chain: row.chain,
    asset: row.asset,
    amount: row.amount,
    fee: row.fee,
    txHash: row.tx_hash,
    blockNumber: row.block_number,
    confirmations: row.confirmations,
    requiredConfirmations: row.required_confirmations,
    from: row.from_address,
    to: row.to_address,
    reference: row.reference,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export type Settlement = ReturnType<typeof toSettlement>;

/** Opaque to clients; base64url, so it can be pasted into a query string as it is. */
function encodeCursor(row: { created_at: number; id: string }): string {
  const bytes = new TextEncoder().encode(JSON.stringify([row.created_at, row.id]));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string): [number, string] {
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))) as unknown;
    if (Array.isArray(value) && typeof value[0] === "number" && typeof value[1] === "string") return [value[0], value[1]];
  } catch {
    // fall through
  }
  throw problem("VALIDATION_FAILED", "the cursor is not one this API gave out", { errors: [{ path: "query.cursor", message: "unknown cursor" }] });
}

export async function listSettlements(
  db: D1Database,
  filter: { status?: SettlementStatus; gatewayId?: string; limit: number; cursor?: string },
): Promise<{ data: Settlement[]; nextCursor: string | null }> {
  const where: string[] = [];
  const binds: unknown[] = [];
  if (filter.status) where.push("status = ?") && binds.push(filter.status);
  if (filter.gatewayId) where.push("gateway_id = ?") && binds.push(filter.gatewayId);
  if (filter.cursor) {
    const [createdAt, id] = decodeCursor(filter.cursor);
    where.push("(created_at < ? OR (created_at = ? AND id < ?))");
    binds.push(createdAt, createdAt, id);
  }
  const sql = `SELECT * FROM settlements ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT ?`;
  const { results } = await db.prepare(sql).bind(...binds, filter.limit + 1).all<SettlementRow>();
  const page = results.slice(0, filter.limit);
  return { data: page.map(toSettlement), nextCursor: results.length > filter.limit ? encodeCursor(page[page.length - 1]!) : null };
}

export async function readSettlement(db: D1Database, id: string) {
  const row = await db.prepare("SELECT * FROM settlements WHERE id = ?").bind(id).first<SettlementRow>();
  const { results: events } = await db
    .prepare("SELECT webhook_id, sequence, status, outcome, received_at FROM gateway_events WHERE settlement_id = ? ORDER BY received_at, sequence")
    .bind(id)
    .all<{ webhook_id: string; sequence: number; status: SettlementStatus; outcome: "applied" | "stale" | "quarantined" | "held"; received_at: number }>();
  if (!row && events.length === 0) throw problem("NOT_FOUND", `no settlement ${id.slice(0, 64)}`);
  const { results: history } = await db
    .prepare("SELECT sequence, from_status, to_status, webhook_id, occurred_at, recorded_at FROM settlement_transitions WHERE settlement_id = ? ORDER BY sequence")
    .bind(id)
    .all<{ sequence: number; from_status: SettlementStatus | null; to_status: SettlementStatus; webhook_id: string; occurred_at: number; recorded_at: number }>();
  return {
    settlement: row ? toSettlement(row) : null,
    history: history.map((h) => ({ sequence: h.sequence, from: h.from_status, to: h.to_status, webhookId: h.webhook_id, occurredAt: h.occurred_at, recordedAt: h.recorded_at })),
    events: events.map((e) => ({ webhookId: e.webhook_id, sequence: e.sequence, status: e.status, outcome: e.outcome, receivedAt: e.received_at })),
  };
}
