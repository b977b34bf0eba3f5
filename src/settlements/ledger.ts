import { problem } from "../core/problem";
import { msSetting } from "../core/settings";
import type { CallbackBody } from "./schemas";
import {
  AWAITING,
  decide,
  type Outcome,
  type QuarantineReason,
  release,
  type SettlementEvent,
  type SettlementState,
  type SettlementStatus,
  type Step,
} from "./state-machine";

/**
 * The settlement ledger in D1. Every accepted event is written in one `batch()` (a
 * transaction) before the gateway gets its answer.
 *
 * Concurrent deliveries are resolved by optimistic concurrency on the settlement row, which every
 * decision reads and every write *claims*: the batch's first statement bumps the row's `version`
 * from the one the decision saw (or creates the row) and stamps it with the batch's own `writer`
 * token; every later statement runs only while the row carries that token. A batch that lost a
 * race wrote nothing and the event is decided again — as a duplicate when its twin won, against
 * the new state otherwise. Held events need no counting of their own: holding one claims the row.
 */
export interface VerifiedEvent {
  gatewayId: string;
  webhookId: string;
  rawBody: string;
  bodySha256: string;
  body: CallbackBody;
  receivedAt: number;
}

export type CurrentStatus = SettlementStatus | typeof AWAITING;

export interface Recorded {
  outcome: Outcome | "duplicate";
  /** Why a quarantined event was not applied. */
  reason?: QuarantineReason;
  settlementId: string;
  status: CurrentStatus;
}

export interface LedgerOptions {
  /** How long a gap may hold events back (`SETTLEMENT_GAP_HOLD_MS`). */
  holdMs: number;
  /** Held events per settlement; past it a callback is refused (429 `HELD_LIMIT`) and retried later. */
  maxHeld: number;
}

const DEFAULT_GAP_HOLD_MS = 10 * 60_000;
const MAX_HELD_PER_SETTLEMENT = 100;

/** Reads `SETTLEMENT_GAP_HOLD_MS` (a whole number of ms), else the default of 10 minutes. */
export function ledgerOptions(env: { SETTLEMENT_GAP_HOLD_MS?: string }): LedgerOptions {
  return { holdMs: msSetting(env.SETTLEMENT_GAP_HOLD_MS, DEFAULT_GAP_HOLD_MS), maxHeld: MAX_HELD_PER_SETTLEMENT };
}

/** An event as a decision sees it: the columns it needs, never a held event's raw body. */
interface LedgerEvent extends SettlementEvent {
  occurredAt: number;
  /** Present for the incoming event; a released held event's body is read only if it sets the details. */
  body?: CallbackBody;
}

interface SettlementKey {
  gatewayId: string;
  settlementId: string;
}

interface Snapshot {
  state: SettlementState | null;
  version: number;
  held: LedgerEvent[];
}

/** Each lost race means another writer won, so this bounds contention, not work. */
const MAX_ATTEMPTS = 32;

async function readSnapshot(db: D1Database, key: SettlementKey, extra: D1PreparedStatement[] = []): Promise<{ snapshot: Snapshot; extra: D1Result[] }> {
  const [settlementRows, heldRows, ...rest] = await db.batch([
    db.prepare("SELECT status, sequence, version FROM settlements WHERE gateway_id = ? AND id = ?").bind(key.gatewayId, key.settlementId),
    db
      .prepare(
        "SELECT webhook_id, sequence, status, received_at, occurred_at FROM gateway_events WHERE gateway_id = ? AND settlement_id = ? AND outcome = 'held' ORDER BY sequence",
      )
      .bind(key.gatewayId, key.settlementId),
    ...extra,
  ]);
  const row = settlementRows!.results[0] as { status: CurrentStatus; sequence: number; version: number } | undefined;
  const held = (heldRows!.results as { webhook_id: string; sequence: number; status: SettlementStatus; received_at: number; occurred_at: number }[]).map(
    (h) => ({
      webhookId: h.webhook_id,
      sequence: h.sequence,
      status: h.status,
      receivedAt: h.received_at,
      occurredAt: h.occurred_at,
    }),
  );
  return { snapshot: { state: row ? { status: row.status, sequence: row.sequence } : null, version: row?.version ?? 0, held }, extra: rest };
}

/** Records one verified event exactly once and applies what it (and the held events it releases) may. */
export async function recordEvent(db: D1Database, event: VerifiedEvent, options: LedgerOptions): Promise<Recorded> {
  const key = { gatewayId: event.gatewayId, settlementId: event.body.data.settlementId };
  const incoming: LedgerEvent = {
    webhookId: event.webhookId,
    sequence: event.body.data.sequence,
    status: event.body.data.status,
    receivedAt: event.receivedAt,
    occurredAt: event.body.occurredAt,
    body: event.body,
  };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    // One consistent snapshot: the settlement, its held events, this id's earlier record, and
    // whether the event's sequence already has an event.
    const { snapshot, extra } = await readSnapshot(db, key, [
      db.prepare("SELECT body_sha256 FROM gateway_events WHERE gateway_id = ? AND webhook_id = ?").bind(event.gatewayId, event.webhookId),
      db
        .prepare("SELECT 1 FROM gateway_events WHERE gateway_id = ? AND settlement_id = ? AND sequence = ? AND outcome IN ('applied', 'quarantined') LIMIT 1")
        .bind(key.gatewayId, key.settlementId, incoming.sequence),
    ]);
    const existing = extra[0]!.results[0] as { body_sha256: string } | undefined;
    if (existing) {
      if (existing.body_sha256 !== event.bodySha256) {
        throw problem("EVENT_ID_CONFLICT", `event ${event.webhookId} was received before with a different body; a new event needs a new id`);
      }
      return { outcome: "duplicate", settlementId: key.settlementId, status: snapshot.state?.status ?? AWAITING };
    }
    const context = { now: event.receivedAt, holdMs: options.holdMs, processedHasEvent: extra[1]!.results.length > 0 };
    const decision = decide(snapshot.state, incoming, snapshot.held, context);
    if (decision.outcome === "held" && snapshot.held.length >= options.maxHeld) throw heldLimit(snapshot.held, options, event.receivedAt);
    const statements = await writeStatements(db, key, snapshot, decision.steps, decision.state, event.receivedAt, {
      event,
      outcome: decision.outcome,
      reason: decision.reason,
    });
    const results = await db.batch(statements);
    if (results[0]!.meta.changes === 1) {
      return {
        outcome: decision.outcome,
        ...(decision.reason ? { reason: decision.reason } : {}),
        settlementId: key.settlementId,
        status: decision.state.status,
      };
    }
    // Lost a race (another delivery of this event, or another event of this settlement): decide again.
  }
  throw problem("UNAVAILABLE", `settlement ${key.settlementId} is being updated by many deliveries at once; retry this one`, {}, { "Retry-After": "1" });
}

/** 429 `HELD_LIMIT`: retry once the oldest held event's gap has been released. */
function heldLimit(held: readonly LedgerEvent[], options: LedgerOptions, now: number) {
  const oldest = Math.min(...held.map((e) => e.receivedAt));
  const retryAfterMs = Math.max(1000, oldest + options.holdMs - now);
  return problem(
    "HELD_LIMIT",
    `this settlement already holds ${held.length} events waiting for a missing sequence; deliver the missing one, or retry after the gap is released`,
    { retryAfterMs },
    { "Retry-After": String(Math.ceil(retryAfterMs / 1000)) },
  );
}

/**
 * Releases the held events of every settlement whose gap has held them `holdMs` (run by the
 * Cron Trigger, so nothing waits for traffic). Returns how many settlements moved.
 */
export async function releaseExpiredHolds(db: D1Database, now: number, options: LedgerOptions, limit = 100): Promise<number> {
  const { results } = await db
    .prepare("SELECT DISTINCT gateway_id, settlement_id FROM gateway_events WHERE outcome = 'held' AND received_at <= ? LIMIT ?")
    .bind(now - options.holdMs, limit)
    .all<{ gateway_id: string; settlement_id: string }>();
  let moved = 0;
  for (const row of results) {
    if (await releaseSettlement(db, { gatewayId: row.gateway_id, settlementId: row.settlement_id }, now, options)) moved += 1;
  }
  return moved;
}

async function releaseSettlement(db: D1Database, key: SettlementKey, now: number, options: LedgerOptions): Promise<boolean> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const { snapshot } = await readSnapshot(db, key);
    const released = release(snapshot.state ?? { status: AWAITING, sequence: 0 }, snapshot.held, { now, holdMs: options.holdMs });
    if (released.steps.length === 0) return false;
    const results = await db.batch(await writeStatements(db, key, snapshot, released.steps, released.state, now));
    if (results[0]!.meta.changes === 1) return true;
  }
  return false;
}

/** The settlement's detail columns, in the order the statements below name them. */
function detailValues(d: CallbackBody["data"]): (string | number | null)[] {
  return [
    d.chain,
    d.asset,
    d.amount,
    d.fee ?? null,
    d.txHash ?? null,
    d.blockNumber ?? null,
    d.confirmations ?? null,
    d.requiredConfirmations ?? null,
    d.from ?? null,
    d.to ?? null,
    d.reference ?? null,
  ];
}

/** The body of the last applied step: the incoming event's, or one released held event's (read once). */
async function lastAppliedBody(db: D1Database, gatewayId: string, steps: readonly Step<LedgerEvent>[]): Promise<CallbackBody | undefined> {
  const last = [...steps].reverse().find((s) => s.outcome === "applied")?.event;
  if (!last) return undefined;
  if (last.body) return last.body;
  const row = await db
    .prepare("SELECT raw_body FROM gateway_events WHERE gateway_id = ? AND webhook_id = ?")
    .bind(gatewayId, last.webhookId)
    .first<{ raw_body: string }>();
  return JSON.parse(row!.raw_body) as CallbackBody;
}

/** What every statement of one batch binds first: the settlement's key and the batch's writer token (?1, ?2, ?3). */
type Ours = readonly [gatewayId: string, settlementId: string, writer: string];

/** True while the settlement row carries this batch's writer token. */
const CLAIMED = "EXISTS (SELECT 1 FROM settlements WHERE gateway_id = ?1 AND id = ?2 AND writer = ?3)";

/** Claims the settlement row for this batch: creates it (awaiting) or bumps the version the decision saw. */
function claimStatement(db: D1Database, ours: Ours, snapshot: Snapshot, now: number): D1PreparedStatement {
  if (snapshot.state === null) {
    return db
      .prepare(
        `INSERT INTO settlements (gateway_id, id, status, sequence, version, writer, created_at, updated_at)
         VALUES (?1, ?2, '${AWAITING}', 0, 1, ?3, ?4, ?4) ON CONFLICT (gateway_id, id) DO NOTHING`,
      )
      .bind(...ours, now);
  }
  return db
    .prepare("UPDATE settlements SET version = version + 1, writer = ?3 WHERE gateway_id = ?1 AND id = ?2 AND version = ?4")
    .bind(...ours, snapshot.version);
}

/** Records the incoming event with its outcome. */
function eventStatement(db: D1Database, ours: Ours, { event, outcome, reason }: Incoming): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO gateway_events (gateway_id, webhook_id, body_sha256, raw_body, received_at, settlement_id, sequence, status, outcome, reason, occurred_at, delivery_id)
       SELECT ?1, ?4, ?5, ?6, ?7, ?2, ?8, ?9, ?10, ?11, ?12, ?3 WHERE ${CLAIMED}`,
    )
    .bind(
      ...ours,
      event.webhookId,
      event.bodySha256,
      event.rawBody,
      event.receivedAt,
      event.body.data.sequence,
      event.body.data.status,
      outcome,
      reason ?? null,
      event.body.occurredAt,
    );
}

/** A processed step: a released held event gets its outcome; an applied one appends to the history. */
function stepStatements(db: D1Database, ours: Ours, step: Step<LedgerEvent>, now: number): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  if (!step.event.body) {
    statements.push(
      db
        .prepare(`UPDATE gateway_events SET outcome = ?4, reason = ?5 WHERE gateway_id = ?1 AND webhook_id = ?6 AND outcome = 'held' AND ${CLAIMED}`)
        .bind(...ours, step.outcome, step.reason ?? null, step.event.webhookId),
    );
  }
  if (step.outcome === "applied") {
    statements.push(
      db
        .prepare(
          `INSERT INTO settlement_transitions (gateway_id, settlement_id, sequence, from_status, to_status, webhook_id, occurred_at, recorded_at, skipped_from)
           SELECT ?1, ?2, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE ${CLAIMED}`,
        )
        .bind(...ours, step.event.sequence, step.from, step.event.status, step.event.webhookId, step.event.occurredAt, now, step.skippedFrom ?? null),
    );
  }
  return statements;
}

/** The settlement after the steps: state and details of the last applied event, or only the sequence the quarantined ones consumed. */
function settlementStatement(db: D1Database, ours: Ours, next: SettlementState, body: CallbackBody | undefined, now: number): D1PreparedStatement {
  if (!body)
    return db
      .prepare("UPDATE settlements SET sequence = ?4, updated_at = ?5 WHERE gateway_id = ?1 AND id = ?2 AND writer = ?3")
      .bind(...ours, next.sequence, now);
  return db
    .prepare(
      `UPDATE settlements SET status = ?4, sequence = ?5, chain = ?6, asset = ?7, amount = ?8, fee = ?9, tx_hash = ?10, block_number = ?11,
         confirmations = ?12, required_confirmations = ?13, from_address = ?14, to_address = ?15, reference = ?16, updated_at = ?17
       WHERE gateway_id = ?1 AND id = ?2 AND writer = ?3`,
    )
    .bind(...ours, next.status, next.sequence, ...detailValues(body.data), now);
}

interface Incoming {
  event: VerifiedEvent;
  outcome: Outcome;
  reason?: QuarantineReason;
}

/**
 * Statements of one decision. The first claims the settlement row; the others run only while
 * the row carries this batch's token, which the batch's transaction makes all or nothing.
 */
async function writeStatements(
  db: D1Database,
  key: SettlementKey,
  snapshot: Snapshot,
  steps: Step<LedgerEvent>[],
  next: SettlementState,
  now: number,
  incoming?: Incoming,
): Promise<D1PreparedStatement[]> {
  const ours: Ours = [key.gatewayId, key.settlementId, crypto.randomUUID()];
  const statements = [claimStatement(db, ours, snapshot, now)];
  if (incoming) statements.push(eventStatement(db, ours, incoming));
  for (const step of steps) statements.push(...stepStatements(db, ours, step, now));
  // Last: the settlement itself.
  if (steps.length > 0) statements.push(settlementStatement(db, ours, next, await lastAppliedBody(db, key.gatewayId, steps), now));
  return statements;
}
