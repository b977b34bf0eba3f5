import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decide,
  isAllowed,
  isReachable,
  release,
  SETTLEMENT_STATUSES,
  type SettlementEvent,
  type SettlementState,
  type SettlementStatus,
} from "../../src/settlements/state-machine";

/** the documented table, written out again independently of the code. */
const ALLOWED = new Set([
  "pending>confirming",
  "pending>dropped",
  "pending>failed",
  "confirming>confirming",
  "confirming>confirmed",
  "confirming>reorged",
  "confirming>failed",
  "confirmed>finalized",
  "confirmed>reorged",
  "reorged>pending",
  "reorged>confirming",
  "reorged>dropped",
  "dropped>pending",
]);

const HOLD = 600_000;
const at = (now: number, processedHasEvent = false) => ({ now, holdMs: HOLD, processedHasEvent });
const event = (sequence: number, status: SettlementStatus, receivedAt = 0, webhookId = `e${sequence}`): SettlementEvent => ({
  webhookId,
  sequence,
  status,
  receivedAt,
});

describe("settlement state table (docs/settlements.md)", () => {
  it("every (from, to) pair is applied or quarantined exactly as the table says", () => {
    for (const from of SETTLEMENT_STATUSES) {
      for (const to of SETTLEMENT_STATUSES) {
        const state: SettlementState = { status: from, sequence: 1 };
        const decision = decide(state, event(2, to), [], at(0));
        const allowed = ALLOWED.has(`${from}>${to}`);
        expect(decision.outcome, `${from} → ${to}`).toBe(allowed ? "applied" : "quarantined");
        // Applied: the settlement moves. Quarantined: it stays, and the sequence is consumed.
        expect(decision.state, `${from} → ${to}`).toEqual({ status: allowed ? to : from, sequence: 2 });
        expect(decision.steps).toEqual([
          { event: expect.objectContaining({ webhookId: "e2" }), outcome: decision.outcome, from, ...(allowed ? {} : { reason: "transition" }) },
        ]);
        expect(isAllowed(from, to)).toBe(ALLOWED.has(`${from}>${to}`));
      }
    }
  });

  it("reachability is the table's transitive closure", () => {
    const closure = (from: SettlementStatus) => {
      const seen = new Set<string>();
      const walk = (s: string) => {
        for (const pair of ALLOWED) {
          const [a, b] = pair.split(">");
          if (a === s && !seen.has(b!)) {
            seen.add(b!);
            walk(b!);
          }
        }
      };
      walk(from);
      return seen;
    };
    for (const from of SETTLEMENT_STATUSES) {
      for (const to of SETTLEMENT_STATUSES) expect(isReachable(from, to), `${from} ⇝ ${to}`).toBe(closure(from).has(to));
    }
    expect(isReachable(null, "failed")).toBe(true);
  });

  it("a new settlement may start in any state", () => {
    for (const to of SETTLEMENT_STATUSES) expect(decide(null, event(1, to), [], at(0)).outcome).toBe("applied");
  });

  it("finalized and failed never change", () => {
    for (const from of ["finalized", "failed"] as const) {
      for (const to of SETTLEMENT_STATUSES) expect(decide({ status: from, sequence: 4 }, event(5, to), [], at(0)).state.status).toBe(from);
    }
  });

  it("below the processed sequence: stale when that sequence had no event, a conflict when it had one; above the next: held", () => {
    const state: SettlementState = { status: "confirming", sequence: 3 };
    expect(decide(state, event(3, "confirmed", 0, "other"), [], at(0, false)).outcome).toBe("stale");
    expect(decide(state, event(3, "confirmed", 0, "other"), [], at(0, true))).toMatchObject({ outcome: "quarantined", reason: "conflict", steps: [] });
    expect(decide(state, event(5, "confirmed"), [], at(0)).outcome).toBe("held");
  });

  it("an arriving event releases the held events that follow it, in order", () => {
    const held = [event(4, "finalized"), event(3, "confirmed")];
    const decision = decide({ status: "pending", sequence: 1 }, event(2, "confirming"), held, at(0));
    expect(decision.steps.map((s) => [s.event.webhookId, s.outcome, s.from])).toEqual([
      ["e2", "applied", "pending"],
      ["e3", "applied", "confirming"],
      ["e4", "applied", "confirmed"],
    ]);
    expect(decision.state).toEqual({ status: "finalized", sequence: 4 });
  });
});

describe("gaps are held at most holdMs", () => {
  it("with only 1 and 3 delivered, 3 is held until the hold ends, then applied across the gap with 2 recorded as skipped", () => {
    const state: SettlementState = { status: "pending", sequence: 1 };
    const held = [event(3, "confirming", 1_000)];
    expect(release(state, held, at(1_000 + HOLD - 1)).steps).toEqual([]);
    const released = release(state, held, at(1_000 + HOLD));
    expect(released.steps).toEqual([{ event: held[0], outcome: "applied", from: "pending", skippedFrom: 2 }]);
    expect(released.state).toEqual({ status: "confirming", sequence: 3 });
  });

  it("with only 2 and 3 delivered, the settlement is awaiting until the hold ends, then starts at 2", () => {
    const held = [event(2, "pending", 0), event(3, "confirming", 5)];
    expect(release({ status: "awaiting", sequence: 0 }, held, at(HOLD - 1)).steps).toEqual([]);
    const released = release({ status: "awaiting", sequence: 0 }, held, at(HOLD + 5));
    expect(released.steps.map((s) => [s.event.sequence, s.outcome, s.skippedFrom])).toEqual([
      [2, "applied", 1],
      [3, "applied", undefined],
    ]);
    expect(released.state).toEqual({ status: "confirming", sequence: 3 });
  });

  it("a step across a gap to a state the table cannot reach is quarantined, and the sequence moves on", () => {
    const released = release({ status: "finalized", sequence: 4 }, [event(6, "pending")], at(HOLD));
    expect(released.steps).toEqual([
      { event: expect.objectContaining({ sequence: 6 }), outcome: "quarantined", reason: "transition", from: "finalized", skippedFrom: 5 },
    ]);
    expect(released.state).toEqual({ status: "finalized", sequence: 6 });
  });

  it("the next callback releases an expired gap too, whatever its own sequence", () => {
    const decision = decide({ status: "pending", sequence: 1 }, event(1, "pending", HOLD, "late"), [event(3, "confirming", 0)], at(HOLD, false));
    expect(decision.outcome).toBe("stale");
    expect(decision.steps.map((s) => s.event.sequence)).toEqual([3]);
  });
});

describe("one event per sequence, whatever the arrival order", () => {
  /** A simulated ledger: events stored by id, the state, the applied history. */
  function deliverAll(events: SettlementEvent[]) {
    const stored = new Map<string, { event: SettlementEvent; outcome: string; reason?: string }>();
    let state: SettlementState | null = null;
    const history: string[] = [];
    for (const incoming of events) {
      if (stored.has(incoming.webhookId)) continue; // duplicate or retry
      const held = [...stored.values()].filter((s) => s.outcome === "held").map((s) => s.event);
      const processedHasEvent = [...stored.values()].some(
        (s) => s.event.sequence === incoming.sequence && (s.outcome === "applied" || s.outcome === "quarantined"),
      );
      const decision: ReturnType<typeof decide<SettlementEvent>> = decide(state, incoming, held, at(0, processedHasEvent));
      stored.set(incoming.webhookId, { event: incoming, outcome: decision.outcome, reason: decision.reason });
      for (const step of decision.steps) {
        stored.set(step.event.webhookId, { event: step.event, outcome: step.outcome, reason: step.reason });
        if (step.outcome === "applied") history.push(`${step.event.sequence}:${step.from}>${step.event.status}`);
      }
      state = decision.state;
    }
    return { state, history, stored };
  }

  it("1,2,3a,3b / 1,3a,3b,2 / 1,3b,3a,2: the second claimant of 3 is quarantined as a conflict, never held, never applied", () => {
    const e1 = event(1, "pending");
    const e2 = event(2, "confirming");
    const a = event(3, "confirmed", 0, "3a");
    const b = event(3, "failed", 0, "3b");
    for (const [order, first, second] of [
      [[e1, e2, a, b], a, b],
      [[e1, a, b, e2], a, b],
      [[e1, b, a, e2], b, a],
    ] as const) {
      const { state, stored } = deliverAll([...order]);
      const label = order.map((e) => e.webhookId).join(",");
      expect(state, label).toEqual({ status: first.status, sequence: 3 });
      expect(stored.get(second.webhookId), label).toMatchObject({ outcome: "quarantined", reason: "conflict" });
      expect(stored.get(first.webhookId)?.outcome, label).toBe("applied");
      expect(
        [...stored.values()].filter((s) => s.outcome === "held"),
        label,
      ).toEqual([]);
    }
  });

  const status = fc.constantFrom<SettlementStatus>(...SETTLEMENT_STATUSES);

  it("any delivery order, with duplicates and retries, ends in the state and history of in-order delivery", () => {
    fc.assert(
      fc.property(
        fc.array(status, { minLength: 1, maxLength: 12 }).chain((statuses) => {
          const events = statuses.map((s, i) => event(i + 1, s, 0, `evt_${i + 1}`));
          const withRetries = fc.array(fc.constantFrom(...events), { maxLength: 8 }).map((retries) => [...events, ...retries]);
          return fc.tuple(
            fc.constant(events),
            withRetries.chain((all) => fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length })),
          );
        }),
        ([inOrder, shuffled]) => {
          const expected = deliverAll(inOrder);
          const actual = deliverAll(shuffled);
          expect({ state: actual.state, history: actual.history }).toEqual({ state: expected.state, history: expected.history });
          // No event is applied twice.
          expect(new Set(actual.history).size).toBe(actual.history.length);
        },
      ),
    );
  });
});
