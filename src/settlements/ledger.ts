import { problem } from "../core/problem";
import type { CallbackBody } from "./schemas";
import { decide, type Outcome, type SettlementEvent, type SettlementState, type SettlementStatus, type Step } from "./state-machine";

/**
 * The settlement ledger in D1. Every accepted event is written in one `batch()` (a
 * transaction) before the gateway gets its answer.
 *
 * Concurrent deliveries are resolved by optimistic concurrency. A decision is made on a
 * snapshot: the settlement's `version` and the number of its held events. The batch's first
 * statement inserts the event only while both are unchanged (and only if the id is new); every
 * later statement of the batch runs only if that very insert happened (its `delivery_id`).
 * The batch reads back the insert's outcome: a batch that lost a race wrote nothing and the
 * event is decided again — as a duplicate when its twin won, against the new state otherwise.
 * Held events count in the snapshot because a held event that lands between another event's
 * read and its write would otherwise never be released.
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

/** Each lost race means another writer won, so this bounds contention, not work; past it, a 5xx makes the gateway retry. */
const MAX_ATTEMPTS = 16;

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
    // One consistent snapshot: this id's earlier record, the settlement, its held events.
    const [existingRows, settlementRows, heldRows] = await db.batch([
      db.prepare("SELECT body_sha256 FROM gateway_events WHERE gateway_id = ? AND webhook_id = ?").bind(event.gatewayId, event.webhookId),
      db.prepare("SELECT status, sequence, gateway_id, version FROM settlements WHERE id = ?").bind(settlementId),
      db.prepare("SELECT gateway_id, webhook_id, raw_body FROM gateway_events WHERE settlement_id = ? AND outcome = 'held' ORDER BY sequence").bind(settlementId),
    ]);
    const existing = existingRows!.results[0] as { body_sha256: string } | undefined;
    const row = settlementRows!.results[0] as { status: SettlementStatus; sequence: number; gateway_id: string; version: number } | undefined;
    if (existing) {
      if (existing.body_sha256 !== event.bodySha256) {
        throw problem("EVENT_ID_CONFLICT", `event ${event.webhookId} was received before with a different body; a new event needs a new id`);
      }
      return { outcome: "duplicate", settlementId, status: row?.status ?? null };
    }
    const state: SettlementState | null = row ? { status: row.status, sequence: row.sequence, gatewayId: row.gateway_id } : null;
    const held = (heldRows!.results as { gateway_id: string; webhook_id: string; raw_body: string }[]).map((h) =>
      asLedgerEvent(h.gateway_id, h.webhook_id, JSON.parse(h.raw_body) as CallbackBody),
    );
    const decision = decide(state, asLedgerEvent(event.gatewayId, event.webhookId, event.body), held);
    const snapshot = { exists: row !== undefined, version: row?.version ?? 0, heldCount: held.length };
    const results = await db.batch(writeStatements(db, event, decision.outcome, decision.steps, decision.state, snapshot));
    if (results[0]!.meta.changes === 1) {
      return { outcome: decision.outcome, settlementId, status: decision.state?.status ?? null };
    }
    // Lost a race (another delivery of this event, or another event of this settlement): decide again.
  }
  throw new Error(`settlement ${settlementId}: could not record event ${event.webhookId} after ${MAX_ATTEMPTS} attempts`);
}

/** The settlement's detail columns, in the order both statements below name them. */
function detailValues(d: CallbackBody["data"]): (string | number | null)[] {
  return [d.chain, d.asset, d.amount, d.fee ?? null, d.txHash ?? null, d.blockNumber ?? null, d.confirmations ?? null, d.requiredConfirmations ?? null, d.from ?? null, d.to ?? null, d.reference ?? null];
}

interface Snapshot {
  exists: boolean;
  version: number;
  heldCount: number;
}

/**
 * Statements of one decision. The first inserts the event while the snapshot still holds; the
 * others run only if that insert happened, which the batch's transaction makes all or nothing.
 */
function writeStatements(
  db: D1Database,
  event: VerifiedEvent,
  outcome: Outcome,
  steps: Step<LedgerEvent>[],
  next: SettlementState | null,
  snapshot: Snapshot,
): D1PreparedStatement[] {
  const settlementId = event.body.data.settlementId;
  const deliveryId = crypto.randomUUID();
  const snapshotHolds = `COALESCE((SELECT version FROM settlements WHERE id = ?1), 0) = ?2
    AND (SELECT COUNT(*) FROM gateway_events WHERE settlement_id = ?1 AND outcome = 'held') = ?3`;
  const inserted = "EXISTS (SELECT 1 FROM gateway_events WHERE gateway_id = ?1 AND webhook_id = ?2 AND delivery_id = ?3)";
  const ours = [event.gatewayId, event.webhookId, deliveryId] as const;
  const statements: D1PreparedStatement[] = [
    db
      .prepare(
        `INSERT INTO gateway_events (gateway_id, webhook_id, body_sha256, raw_body, received_at, settlement_id, sequence, status, outcome, delivery_id)
         SELECT ?4, ?5, ?6, ?7, ?8, ?1, ?9, ?10, ?11, ?12 WHERE ${snapshotHolds}
         ON CONFLICT (gateway_id, webhook_id) DO NOTHING`,
      )
      .bind(
        settlementId,
        snapshot.version,
        snapshot.heldCount,
        event.gatewayId,
        event.webhookId,
        event.bodySha256,
        event.rawBody,
        event.receivedAt,
        event.body.data.sequence,
        event.body.data.status,
        outcome,
        deliveryId,
      ),
  ];
  for (const step of steps) {
    if (step.event.webhookId !== event.webhookId || step.event.gatewayId !== event.gatewayId) {
      // A held event this one releases.
      statements.push(
        db
          .prepare(`UPDATE gateway_events SET outcome = ?4 WHERE gateway_id = ?5 AND webhook_id = ?6 AND outcome = 'held' AND ${inserted}`)
          .bind(...ours, step.outcome, step.event.gatewayId, step.event.webhookId),
      );
    }
    if (step.outcome === "applied") {
      statements.push(
        db
          .prepare(
            `INSERT INTO settlement_transitions (settlement_id, sequence, from_status, to_status, webhook_id, occurred_at, recorded_at)
             SELECT ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE ${inserted}`,
          )
          .bind(...ours, settlementId, step.event.sequence, step.from, step.event.status, step.event.webhookId, step.event.body.occurredAt, event.receivedAt),
      );
    }
  }
  // Last: the settlement itself, which moves the version the next decision is checked against.
  if (steps.length > 0 && next) {
    const lastApplied = [...steps].reverse().find((s) => s.outcome === "applied")?.event.body.data;
    if (!snapshot.exists) {
      // A new settlement starts with an applied event (any state is allowed from none).
      statements.push(
        db
          .prepare(
            `INSERT INTO settlements (id, gateway_id, status, sequence, version, chain, asset, amount, fee, tx_hash, block_number, confirmations,
               required_confirmations, from_address, to_address, reference, created_at, updated_at)
             SELECT ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?19 WHERE ${inserted}`,
          )
          .bind(...ours, settlementId, next.gatewayId, next.status, next.sequence, ...detailValues(lastApplied!), event.receivedAt),
      );
    } else if (lastApplied) {
      statements.push(
        db
          .prepare(
            `UPDATE settlements SET status = ?4, sequence = ?5, version = version + 1, chain = ?6, asset = ?7, amount = ?8, fee = ?9, tx_hash = ?10,
               block_number = ?11, confirmations = ?12, required_confirmations = ?13, from_address = ?14, to_address = ?15, reference = ?16, updated_at = ?17
             WHERE id = ?18 AND ${inserted}`,
          )
          .bind(...ours, next.status, next.sequence, ...detailValues(lastApplied), event.receivedAt, settlementId),
      );
    } else {
      // Only quarantined steps: the sequence is consumed, the state is not changed.
      statements.push(
        db
          .prepare(`UPDATE settlements SET sequence = ?4, version = version + 1, updated_at = ?5 WHERE id = ?6 AND ${inserted}`)
          .bind(...ours, next.sequence, event.receivedAt, settlementId),
      );
    }
  }
  return statements;
}
