/**
 * Settlement states (contract section 7) and what one event does to a settlement.
 *
 * Sequences start at 1 and increase by 1 with every update of a settlement. Events are
 * processed strictly in sequence order: one that arrives early is held and processed as soon
 * as the missing ones arrive, so every delivery order ends where in-order delivery ends.
 */
export const SETTLEMENT_STATUSES = ["pending", "confirming", "confirmed", "finalized", "reorged", "dropped", "failed"] as const;
export type SettlementStatus = (typeof SETTLEMENT_STATUSES)[number];

export const TRANSITIONS: Record<SettlementStatus, readonly SettlementStatus[]> = {
  pending: ["confirming", "dropped", "failed"],
  confirming: ["confirming", "confirmed", "reorged", "failed"],
  confirmed: ["finalized", "reorged"],
  reorged: ["pending", "confirming", "dropped"],
  dropped: ["pending"],
  finalized: [],
  failed: [],
};

/** A new settlement may start in any state; afterwards only the table's transitions apply. */
export function isAllowed(from: SettlementStatus | null, to: SettlementStatus): boolean {
  return from === null || TRANSITIONS[from].includes(to);
}

export type Outcome = "applied" | "stale" | "quarantined" | "held";

export interface SettlementState {
  status: SettlementStatus;
  sequence: number;
  gatewayId: string;
}

export interface SettlementEvent {
  webhookId: string;
  gatewayId: string;
  sequence: number;
  status: SettlementStatus;
}

export interface Step<E extends SettlementEvent> {
  event: E;
  outcome: "applied" | "quarantined";
  from: SettlementStatus | null;
}

export interface Decision<E extends SettlementEvent> {
  /** What happens to the incoming event. */
  outcome: Outcome;
  /** Events processed now, in sequence order: the incoming one and any held ones it releases. */
  steps: Step<E>[];
  /** The settlement after the steps (unchanged when nothing was processed). */
  state: SettlementState | null;
}

/**
 * Decides an incoming event against the settlement's state and its held events. Stale: its
 * sequence was processed already. Held: a sequence before it is missing. Otherwise it is
 * processed: applied if the transition is allowed, else quarantined — stored, its sequence
 * consumed, the state unchanged.
 *
 * A settlement belongs to the gateway whose event created it. Another gateway's event for it
 * is quarantined at once and never takes part in the sequence, so one gateway cannot consume
 * (and so make stale) the sequence numbers of another's settlement.
 */
export function decide<E extends SettlementEvent>(state: SettlementState | null, incoming: E, held: readonly E[]): Decision<E> {
  const owner = state?.gatewayId ?? incoming.gatewayId;
  if (incoming.gatewayId !== owner) return { outcome: "quarantined", steps: [], state };
  const processed = state?.sequence ?? 0;
  if (incoming.sequence <= processed) return { outcome: "stale", steps: [], state };
  if (incoming.sequence > processed + 1) return { outcome: "held", steps: [], state };
  const waiting = new Map(held.filter((event) => event.gatewayId === owner).map((event) => [event.sequence, event]));
  waiting.set(incoming.sequence, incoming);
  const steps: Step<E>[] = [];
  let current = state;
  for (let next = processed + 1; waiting.has(next); next++) {
    const event = waiting.get(next)!;
    const from = current?.status ?? null;
    if (isAllowed(from, event.status)) {
      steps.push({ event, outcome: "applied", from });
      current = { status: event.status, sequence: next, gatewayId: owner };
    } else {
      steps.push({ event, outcome: "quarantined", from });
      current = { ...current!, sequence: next };
    }
  }
  return { outcome: steps[0]!.outcome, steps, state: current };
}
