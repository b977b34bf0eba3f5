/**
 * Settlement states (docs/settlements.md) and what one event does to a settlement.
 *
 * A settlement is one gateway's: it is keyed by (gateway, settlement id), so no gateway can
 * create, advance or block another's. Sequences start at 1 and increase by 1 with every update.
 * Events are processed in sequence order: one that arrives early is *held* until the missing
 * ones arrive — but at most `holdMs`. After that the held events are processed across the gap,
 * in sequence order: a step across a gap is applied when its state is reachable from the current
 * one through the table (the skipped sequences are recorded), otherwise quarantined.
 *
 * Each sequence has at most one event. A second, different event claiming a sequence that
 * already has one (processed or held) is quarantined as a `conflict`: it never replaces the
 * first and is never held, so which one counts never depends on what arrives after it.
 */
export const SETTLEMENT_STATUSES = ["pending", "confirming", "confirmed", "finalized", "reorged", "dropped", "failed"] as const;
export type SettlementStatus = (typeof SETTLEMENT_STATUSES)[number];
/** A settlement known only through held events: nothing applied yet. */
export const AWAITING = "awaiting";
export type SettlementState = { status: SettlementStatus | typeof AWAITING; sequence: number };

export const TRANSITIONS: Record<SettlementStatus, readonly SettlementStatus[]> = {
  pending: ["confirming", "dropped", "failed"],
  confirming: ["confirming", "confirmed", "reorged", "failed"],
  confirmed: ["finalized", "reorged"],
  reorged: ["pending", "confirming", "dropped"],
  dropped: ["pending"],
  finalized: [],
  failed: [],
};

/** A new (or awaiting) settlement may start in any state; afterwards only the table's transitions apply. */
export function isAllowed(from: SettlementStatus | null, to: SettlementStatus): boolean {
  return from === null || TRANSITIONS[from].includes(to);
}

/** True when `to` can be reached from `from` through one or more transitions of the table. */
export function isReachable(from: SettlementStatus | null, to: SettlementStatus): boolean {
  if (from === null) return true;
  const seen = new Set<SettlementStatus>();
  const queue: SettlementStatus[] = [...TRANSITIONS[from]];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (next === to) return true;
    if (!seen.has(next)) {
      seen.add(next);
      queue.push(...TRANSITIONS[next]);
    }
  }
  return false;
}

export type Outcome = "applied" | "stale" | "quarantined" | "held";
/** Why an event was quarantined: the table forbids its step, or its sequence had an event already. */
export type QuarantineReason = "transition" | "conflict";

export interface SettlementEvent {
  webhookId: string;
  sequence: number;
  status: SettlementStatus;
  /** When the service received it (ms): a held event waits at most `holdMs` from here. */
  receivedAt: number;
}

export interface Step<E extends SettlementEvent> {
  event: E;
  outcome: "applied" | "quarantined";
  reason?: QuarantineReason;
  from: SettlementStatus | null;
  /** The first sequence skipped when the step crossed a gap (the skipped ones run to `event.sequence − 1`). */
  skippedFrom?: number;
}

export interface Decision<E extends SettlementEvent> {
  /** What happens to the incoming event (none when only held events are released). */
  outcome: Outcome;
  reason?: QuarantineReason;
  /** Events processed now, in sequence order: the incoming one and the held ones released with it. */
  steps: Step<E>[];
  /** The settlement after the steps. */
  state: SettlementState;
}

export interface DecisionContext {
  now: number;
  /** How long a gap may hold events back (`SETTLEMENT_GAP_HOLD_MS`). */
  holdMs: number;
  /** Whether the incoming event's sequence, if already processed, had an event (else it was skipped). */
  processedHasEvent?: boolean;
}

const statusOf = (state: SettlementState): SettlementStatus | null => (state.status === AWAITING ? null : state.status);

/**
 * Processes `waiting` (held events, with the incoming one if it is next or held) in sequence
 * order from `state`: consecutive ones directly, across a gap once every event still waiting
 * has waited `holdMs`.
 */
function process<E extends SettlementEvent>(
  state: SettlementState,
  waiting: readonly E[],
  context: DecisionContext,
): { steps: Step<E>[]; state: SettlementState } {
  const sorted = [...waiting].sort((a, b) => a.sequence - b.sequence);
  // The oldest arrival among the events from i on: a gap before event i has blocked them since then.
  const oldestFrom = sorted.map((e) => e.receivedAt);
  for (let i = oldestFrom.length - 2; i >= 0; i--) oldestFrom[i] = Math.min(oldestFrom[i]!, oldestFrom[i + 1]!);
  const steps: Step<E>[] = [];
  let current = state;
  for (let i = 0; i < sorted.length; i++) {
    const event = sorted[i]!;
    const consecutive = event.sequence === current.sequence + 1;
    if (!consecutive && oldestFrom[i]! + context.holdMs > context.now) break;
    const from = statusOf(current);
    const allowed = consecutive ? isAllowed(from, event.status) : isReachable(from, event.status);
    const skipped = consecutive ? {} : { skippedFrom: current.sequence + 1 };
    if (allowed) {
      steps.push({ event, outcome: "applied", from, ...skipped });
      current = { status: event.status, sequence: event.sequence };
    } else {
      steps.push({ event, outcome: "quarantined", reason: "transition", from, ...skipped });
      current = { ...current, sequence: event.sequence };
    }
  }
  return { steps, state: current };
}

/**
 * Decides an incoming event against the settlement's state and its held events (at most one per
 * sequence), and releases what a gap no longer holds back.
 */
export function decide<E extends SettlementEvent>(state: SettlementState | null, incoming: E, held: readonly E[], context: DecisionContext): Decision<E> {
  const known = state ?? { status: AWAITING, sequence: 0 };
  if (incoming.sequence <= known.sequence) {
    const released = process(known, held, context);
    return context.processedHasEvent ? { outcome: "quarantined", reason: "conflict", ...released } : { outcome: "stale", ...released };
  }
  if (held.some((event) => event.sequence === incoming.sequence)) {
    return { outcome: "quarantined", reason: "conflict", ...process(known, held, context) };
  }
  const result = process(known, [...held, incoming], context);
  const own = result.steps.find((step) => step.event === incoming);
  return own ? { outcome: own.outcome, ...(own.reason ? { reason: own.reason } : {}), ...result } : { outcome: "held", ...result };
}

/** Releases held events whose gap has held them `holdMs` (the Cron Trigger's work): no incoming event. */
export function release<E extends SettlementEvent>(
  state: SettlementState,
  held: readonly E[],
  context: DecisionContext,
): { steps: Step<E>[]; state: SettlementState } {
  return process(state, held, context);
}
