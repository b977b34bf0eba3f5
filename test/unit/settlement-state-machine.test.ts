import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decide, isAllowed, SETTLEMENT_STATUSES, type SettlementEvent, type SettlementState, type SettlementStatus } from "../../src/settlements/state-machine";

/** The contract's table, written out again independently of the code. */
const ALLOWED = new Set([
  "pending>confirming", "pending>dropped", "pending>failed",
  "confirming>confirming", "confirming>confirmed", "confirming>reorged", "confirming>failed",
  "confirmed>finalized", "confirmed>reorged",
  "reorged>pending", "reorged>confirming", "reorged>dropped",
  "dropped>pending",
]);

describe("settlement state table (contract 7)", () => {
  it("every (from, to) pair is applied or quarantined exactly as the table says", () => {
    for (const from of SETTLEMENT_STATUSES) {
      for (const to of SETTLEMENT_STATUSES) {
        const state: SettlementState = { status: from, sequence: 1, gatewayId: "gw" };
        const decision = decide(state, { webhookId: "e2", gatewayId: "gw", sequence: 2, status: to }, []);
        const allowed = ALLOWED.has(`${from}>${to}`);
        expect(decision.outcome, `${from} → ${to}`).toBe(allowed ? "applied" : "quarantined");
        // Applied: the settlement moves. Quarantined: it stays, and the sequence is consumed.
        expect(decision.state, `${from} → ${to}`).toEqual({ status: allowed ? to : from, sequence: 2, gatewayId: "gw" });
        expect(decision.steps).toEqual([{ event: expect.objectContaining({ webhookId: "e2" }), outcome: decision.outcome, from }]);
        expect(isAllowed(from, to)).toBe(ALLOWED.has(`${from}>${to}`));
      }
    }
  });

  it("a new settlement may start in any state", () => {
    for (const to of SETTLEMENT_STATUSES) expect(decide(null, { webhookId: "e1", gatewayId: "gw", sequence: 1, status: to }, []).outcome).toBe("applied");
  });

  it("finalized and failed never change", () => {
    for (const from of ["finalized", "failed"] as const) {
      for (const to of SETTLEMENT_STATUSES) {
        const decision = decide({ status: from, sequence: 4, gatewayId: "gw" }, { webhookId: "x", gatewayId: "gw", sequence: 5, status: to }, []);
        expect(decision.state?.status).toBe(from);
      }
    }
  });

  it("stale below the processed sequence; held above the next; another gateway's event is quarantined", () => {
    const state: SettlementState = { status: "confirming", sequence: 3, gatewayId: "gw" };
    expect(decide(state, { webhookId: "a", gatewayId: "gw", sequence: 3, status: "confirmed" }, []).outcome).toBe("stale");
    expect(decide(state, { webhookId: "b", gatewayId: "gw", sequence: 5, status: "confirmed" }, []).outcome).toBe("held");
    expect(decide(state, { webhookId: "c", gatewayId: "other", sequence: 4, status: "confirmed" }, []).outcome).toBe("quarantined");
  });

  it("another gateway's event is quarantined without consuming the owner's sequence, and its held events are never released", () => {
    const state: SettlementState = { status: "pending", sequence: 1, gatewayId: "gw" };
    for (const sequence of [1, 2, 3]) {
      const decision = decide(state, { webhookId: `x${sequence}`, gatewayId: "intruder", sequence, status: "confirming" }, []);
      expect(decision).toEqual({ outcome: "quarantined", steps: [], state });
    }
    const foreignHeld: SettlementEvent[] = [{ webhookId: "x3", gatewayId: "intruder", sequence: 3, status: "failed" }];
    const own = decide(state, { webhookId: "e2", gatewayId: "gw", sequence: 2, status: "confirming" }, foreignHeld);
    expect(own.steps.map((s) => s.event.webhookId)).toEqual(["e2"]);
    expect(own.state).toEqual({ status: "confirming", sequence: 2, gatewayId: "gw" });
  });

  it("an arriving event releases the held events that follow it, in order", () => {
    const held: SettlementEvent[] = [
      { webhookId: "e4", gatewayId: "gw", sequence: 4, status: "finalized" },
      { webhookId: "e3", gatewayId: "gw", sequence: 3, status: "confirmed" },
    ];
    const decision = decide({ status: "pending", sequence: 1, gatewayId: "gw" }, { webhookId: "e2", gatewayId: "gw", sequence: 2, status: "confirming" }, held);
    expect(decision.steps.map((s) => [s.event.webhookId, s.outcome, s.from])).toEqual([
      ["e2", "applied", "pending"],
      ["e3", "applied", "confirming"],
      ["e4", "applied", "confirmed"],
    ]);
    expect(decision.state).toEqual({ status: "finalized", sequence: 4, gatewayId: "gw" });
  });

  /** A simulated ledger: events stored by id, the state, the applied history. */
  function deliverAll(events: SettlementEvent[]) {
    const stored = new Map<string, { event: SettlementEvent; outcome: string }>();
    let state: SettlementState | null = null;
    const history: string[] = [];
    for (const event of events) {
      if (stored.has(event.webhookId)) continue; // duplicate or retry
      const held = [...stored.values()].filter((s) => s.outcome === "held").map((s) => s.event);
      const decision: ReturnType<typeof decide<SettlementEvent>> = decide(state, event, held);
      stored.set(event.webhookId, { event, outcome: decision.outcome });
      for (const step of decision.steps) {
        stored.set(step.event.webhookId, { event: step.event, outcome: step.outcome });
        if (step.outcome === "applied") history.push(`${step.event.sequence}:${step.from}>${step.event.status}`);
      }
      state = decision.state;
    }
    return { state, history };
  }

  const status = fc.constantFrom<SettlementStatus>(...SETTLEMENT_STATUSES);

  it("any delivery order, with duplicates and retries, ends in the state and history of in-order delivery", () => {
    fc.assert(
      fc.property(
        fc.array(status, { minLength: 1, maxLength: 12 }).chain((statuses) => {
          const events = statuses.map((s, i) => ({ webhookId: `evt_${i + 1}`, gatewayId: "gw", sequence: i + 1, status: s }));
          const withRetries = fc.array(fc.constantFrom(...events), { maxLength: 8 }).map((retries) => [...events, ...retries]);
          return fc.tuple(fc.constant(events), withRetries.chain((all) => fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length })));
        }),
        ([inOrder, shuffled]) => {
          const expected = deliverAll(inOrder);
          const actual = deliverAll(shuffled);
          expect(actual).toEqual(expected);
          // No event is applied twice.
          expect(new Set(actual.history).size).toBe(actual.history.length);
        },
      ),
    );
  });
});
