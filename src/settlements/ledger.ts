import { problem } from "../core/problem";
import type { CallbackBody } from "./schemas";
import { decide, type Outcome, type SettlementEvent, type SettlementState, type SettlementStatus, type Step } from "./state-machine";

/**
 * The settlement ledger in D1. Every accepted event is written in one `batch()` (a
 * transaction) before the gateway gets its answer. Concurrent writers are resolved by
 * optimistic concurrency: every statement of a batch runs only while the settlement's
 * `version` is still the one the decision was made on, so a batch that lost a race writes
 * nothing and is decided again.
 */
export interface VerifiedEvent {
  gatewayId: string;
  webhookId: string;
  rawBody: string;
  bodySha256: string;
  body: CallbackBody;
  receivedAt: number;
}

export interface Recorded {
  outcome: Outcome | "duplicate";
  settlementId: string;
  status: SettlementStatus | null;
}

interface LedgerEvent extends SettlementEvent {
  body: CallbackBody;
}

const MAX_ATTEMPTS = 8;

function asLedgerEvent(gatewayId: string, webhookId: string, body: CallbackBody): LedgerEvent {
  return { webhookId, gatewayId, sequence: body.data.sequence, status: body.data.status, body };
}

export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Records one verified event exactly once and applies what it (and the held events it releases) may. */
export async function recordEvent(db: D1Database, event: VerifiedEvent): Promise<Recorded> {
  const settlementId = event.body.data.settlementId;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const existing = await db
      .prepare("SELECT body_sha256 FROM gateway_events WHERE gateway_id = ? AND webhook_id = ?")
      .bind(event.gatewayId, event.webhookId)
      .first<{ body_sha256: string }>();
    if (existing) {
      if (existing.body_sha256 !== event.bodySha256) {
        throw problem("EVENT_ID_CONFLICT", `event ${event.webhookId} was received before with a different body; a new event needs a new id`);
      }
      return { outcome: "duplicate", settlementId, status: await currentStatus(db, settlementId) };
    }
    const row = await db
      .prepare("SELECT status, sequence, gateway_id, version FROM settlements WHERE id = ?")
      .bind(settlementId)
      .first<{ status: SettlementStatus; sequence: number; gateway_id: string; version: number }>();
    const state: SettlementState | null = row ? { status: row.status, sequence: row.sequence, gatewayId: row.gateway_id } : null;
    const version = row?.version ?? 0;
    const { results: heldRows } = await db
      .prepare("SELECT gateway_id, webhook_id, raw_body FROM gateway_events WHERE settlement_id = ? AND outcome = 'held' ORDER BY sequence")
      .bind(settlementId)
      .all<{ gateway_id: string; webhook_id: string; raw_body: string }>();
    const held = heldRows.map((h) => asLedgerEvent(h.gateway_id, h.webhook_id, JSON.parse(h.raw_body) as CallbackBody));
    const incoming = asLedgerEvent(event.gatewayId, event.webhookId, event.body);
    const decision = decide(state, incoming, held);

    const statements = writeStatements(db, event, decision.outcome, decision.steps, decision.state, row !== null, version);
    const results = await db.batch(statements);
    if (results[0]!.meta.changes === 1) {
      return { outcome: decision.outcome, settlementId, status: decision.state?.status ?? null };
    }
    // Lost a race (another delivery of this event, or another event of this settlement): decide again.
  }
  throw new Error(`settlement ${settlementId}: could not record event ${event.webhookId} after ${MAX_ATTEMPTS} attempts`);
}

async function currentStatus(db: D1Database, settlementId: string): Promise<SettlementStatus | null> {
  const row = await db.prepare("SELECT status FROM settlements WHERE id = ?").bind(settlementId).first<{ status: SettlementStatus }>();
  return row?.status ?? null;
}

/** The settlement's detail columns, in the order both statements below name them. */
function detailValues(d: CallbackBody["data"]): (string | number | null)[] {
  return [d.chain, d.asset, d.amount, d.fee ?? null, d.txHash ?? null, d.blockNumber ?? null, d.confirmations ?? null, d.requiredConfirmations ?? null, d.from ?? null, d.to ?? null, d.reference ?? null];
}

/** Statements of one decision; each runs only while the settlement's version is unchanged. */
function writeStatements(
  db: D1Database,
  event: VerifiedEvent,
  outcome: Outcome,
  steps: Step<LedgerEvent>[],
  next: SettlementState | null,
  exists: boolean,
  version: number,
): D1PreparedStatement[] {
  const guard = "COALESCE((SELECT version FROM settlements WHERE id = ?), 0) = ?";
  const settlementId = event.body.data.settlementId;
  const statements: D1PreparedStatement[] = [
    db
      .prepare(
        `INSERT INTO gateway_events (gateway_id, webhook_id, body_sha256, raw_body, received_at, settlement_id, sequence, status, outcome, delivery_id)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${guard} ON CONFLICT (gateway_id, webhook_id) DO NOTHING`,
      )
      .bind(
        event.gatewayId,
        event.webhookId,
        event.bodySha256,
        event.rawBody,
        event.receivedAt,
        settlementId,
        event.body.data.sequence,
        event.body.data.status,
        outcome,
        crypto.randomUUID(),
        settlementId,
        version,
      ),
  ];
  for (const step of steps) {
    if (step.event.webhookId !== event.webhookId || step.event.gatewayId !== event.gatewayId) {
      statements.push(
        db
          .prepare(`UPDATE gateway_events SET outcome = ? WHERE gateway_id = ? AND webhook_id = ? AND outcome = 'held' AND ${guard}`)
          .bind(step.outcome, step.event.gatewayId, step.event.webhookId, settlementId, version),
      );
    }
    if (step.outcome === "applied") {
      statements.push(
        db
          .prepare(
            `INSERT INTO settlement_transitions (settlement_id, sequence, from_status, to_status, webhook_id, occurred_at, recorded_at)
             SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${guard}`,
          )
          .bind(settlementId, step.event.sequence, step.from, step.event.status, step.event.webhookId, step.event.body.occurredAt, event.receivedAt, settlementId, version),
      );
    }
  }
  // Last: the settlement itself, which moves the version every statement above checked.
  if (steps.length > 0 && next) {
    const lastApplied = [...steps].reverse().find((s) => s.outcome === "applied")?.event.body.data;
    if (!exists) {
      const d = lastApplied!;
      statements.push(
        db
          .prepare(
            `INSERT INTO settlements (id, gateway_id, status, sequence, version, chain, asset, amount, fee, tx_hash, block_number, confirmations,
               required_confirmations, from_address, to_address, reference, created_at, updated_at)
             SELECT ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${guard}`,
          )
          .bind(settlementId, next.gatewayId, next.status, next.sequence, ...detailValues(d), event.receivedAt, event.receivedAt, settlementId, version),
      );
    } else if (lastApplied) {
      const d = lastApplied;
      statements.push(
        db
          .prepare(
            `UPDATE settlements SET status = ?, sequence = ?, version = version + 1, chain = ?, asset = ?, amount = ?, fee = ?, tx_hash = ?,
               block_number = ?, confirmations = ?, required_confirmations = ?, from_address = ?, to_address = ?, reference = ?, updated_at = ?
             WHERE id = ? AND version = ?`,
          )
          .bind(next.status, next.sequence, ...detailValues(d), event.receivedAt, settlementId, version),
      );
    } else {
      // Only quarantined steps: the sequence is consumed, the state is not changed.
      statements.push(
        db.prepare("UPDATE settlements SET sequence = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?").bind(next.sequence, event.receivedAt, settlementId, version),
      );
    }
  }
  return statements;
}
