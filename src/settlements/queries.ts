import { fromBase64Url, toBase64Url } from "../core/encoding";
import { problem } from "../core/problem";
import type { CurrentStatus } from "./ledger";
import type { QuarantineReason, SettlementStatus } from "./state-machine";

/** Operator reads of settlements: filtered, cursor-paginated, with history and events. */
interface SettlementRow {
  id: string;
  gateway_id: string;
  status: CurrentStatus;
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
function encodeCursor(row: { created_at: number; gateway_id: string; id: string }): string {
  return toBase64Url(new TextEncoder().encode(JSON.stringify([row.created_at, row.gateway_id, row.id])));
}

function decodeCursor(cursor: string): [number, string, string] {
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(fromBase64Url(cursor))) as unknown;
    if (Array.isArray(value) && typeof value[0] === "number" && typeof value[1] === "string" && typeof value[2] === "string")
      return [value[0], value[1], value[2]];
  } catch {
    // fall through
  }
  throw problem("VALIDATION_FAILED", "the cursor is not one this API gave out", { errors: [{ path: "query.cursor", message: "unknown cursor" }] });
}

export async function listSettlements(
  db: D1Database,
  filter: { status?: CurrentStatus; gatewayId?: string; limit: number; cursor?: string },
): Promise<{ data: Settlement[]; nextCursor: string | null }> {
  const where: string[] = [];
  const binds: unknown[] = [];
  if (filter.status) where.push("status = ?") && binds.push(filter.status);
  if (filter.gatewayId) where.push("gateway_id = ?") && binds.push(filter.gatewayId);
  if (filter.cursor) {
    const [createdAt, gatewayId, id] = decodeCursor(filter.cursor);
    where.push("(created_at < ? OR (created_at = ? AND (gateway_id < ? OR (gateway_id = ? AND id < ?))))");
    binds.push(createdAt, createdAt, gatewayId, gatewayId, id);
  }
  const sql = `SELECT * FROM settlements ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, gateway_id DESC, id DESC LIMIT ?`;
  const { results } = await db
    .prepare(sql)
    .bind(...binds, filter.limit + 1)
    .all<SettlementRow>();
  const page = results.slice(0, filter.limit);
  return { data: page.map(toSettlement), nextCursor: results.length > filter.limit ? encodeCursor(page[page.length - 1]!) : null };
}

/** One gateway's settlement (ids are the gateway's own: the pair names it), its history and every event received for it. */
export async function readSettlement(db: D1Database, gatewayId: string, id: string) {
  const [settlementRows, historyRows, eventRows] = await db.batch([
    db.prepare("SELECT * FROM settlements WHERE gateway_id = ? AND id = ?").bind(gatewayId, id),
    db
      .prepare(
        "SELECT sequence, from_status, to_status, webhook_id, occurred_at, recorded_at, skipped_from FROM settlement_transitions WHERE gateway_id = ? AND settlement_id = ? ORDER BY sequence",
      )
      .bind(gatewayId, id),
    db
      .prepare(
        "SELECT webhook_id, sequence, status, outcome, reason, received_at FROM gateway_events WHERE gateway_id = ? AND settlement_id = ? ORDER BY received_at, sequence",
      )
      .bind(gatewayId, id),
  ]);
  const row = settlementRows!.results[0] as SettlementRow | undefined;
  if (!row) throw problem("NOT_FOUND", `gateway ${gatewayId.slice(0, 64)} has no settlement ${id.slice(0, 64)}`);
  type HistoryRow = {
    sequence: number;
    from_status: SettlementStatus | null;
    to_status: SettlementStatus;
    webhook_id: string;
    occurred_at: number;
    recorded_at: number;
    skipped_from: number | null;
  };
  type EventRow = {
    webhook_id: string;
    sequence: number;
    status: SettlementStatus;
    outcome: "applied" | "stale" | "quarantined" | "held";
    reason: QuarantineReason | null;
    received_at: number;
  };
  return {
    settlement: toSettlement(row),
    history: (historyRows!.results as HistoryRow[]).map((h) => ({
      sequence: h.sequence,
      from: h.from_status,
      to: h.to_status,
      webhookId: h.webhook_id,
      occurredAt: h.occurred_at,
      recordedAt: h.recorded_at,
      skipped: h.skipped_from === null ? null : { from: h.skipped_from, to: h.sequence - 1 },
    })),
    events: (eventRows!.results as EventRow[]).map((e) => ({
      webhookId: e.webhook_id,
      sequence: e.sequence,
      status: e.status,
      outcome: e.outcome,
      reason: e.reason,
      receivedAt: e.received_at,
    })),
  };
}
