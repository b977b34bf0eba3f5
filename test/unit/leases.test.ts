import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IsolateLeases } from "../../src/access/leases";
import { LocalRefusals } from "../../src/access/local-refusals";
import { LEASE_MS, SlidingWindow } from "../../src/access/sliding-window";

/**
 * One principal's requests spread over simulated isolates, each with its own leases and local
 * refusals, all asking one guard's window — the production path of `admit()` with the clock and
 * the isolate chosen by the test. Requests at one isolate are in sequence (each answered before
 * the next); `concurrent` marks the isolates whose next request starts before the previous ended.
 */
function simulate(limit: number, arrivals: { at: number; isolate: number }[], isolates: number) {
  const guard = new SlidingWindow(limit);
  const sides = Array.from({ length: isolates }, () => ({ leases: new IsolateLeases(), refusals: new LocalRefusals() }));
  const admitted: number[] = [];
  const refused: { at: number; locally: boolean }[] = [];
  let guardCalls = 0;
  for (const { at, isolate } of arrivals) {
    const { leases, refusals } = sides[isolate]!;
    if (refusals.refusal("p", at)) {
      refused.push({ at, locally: true });
      continue;
    }
    if (leases.spend("p", at)) {
      admitted.push(at);
      continue;
    }
    const lease = leases.asked("p", at);
    const handBack = leases.takeHandBack("p");
    guardCalls += 1;
    if (handBack) guard.handBack(handBack.id, handBack.unused, at);
    const admission = guard.admit(at, lease);
    leases.done("p");
    if (!admission.allowed) {
      refusals.remember("p", admission, at);
      refused.push({ at, locally: false });
      continue;
    }
    leases.keep("p", admission, at);
    admitted.push(at);
  }
  return { admitted, refused, guardCalls };
}

/** The naive model's question: the most admissions any rolling 1,000 ms window holds. */
function busiestWindow(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** Keeps only the arrivals that leave every rolling window within `cap` (a compliant principal). */
function compliant(arrivals: { at: number; isolate: number }[], cap: number) {
  const kept: { at: number; isolate: number }[] = [];
  for (const a of arrivals) if (kept.filter((k) => k.at > a.at - 1000).length < cap) kept.push(a);
  return kept;
}

const arrivalsOf = (isolates: number) =>
  fc
    .array(fc.record({ gap: fc.integer({ min: 0, max: 120 }), isolate: fc.integer({ min: 0, max: isolates - 1 }) }), { minLength: 1, maxLength: 400 })
    .map((steps) => {
      let at = 1_000_000;
      return steps.map(({ gap, isolate }) => ({ at: (at += gap), isolate }));
    });

const scenario = fc
  .record({ limit: fc.constantFrom(10, 30, 50), isolates: fc.integer({ min: 1, max: 8 }) })
  .chain(({ limit, isolates }) => fc.record({ limit: fc.constant(limit), isolates: fc.constant(isolates), arrivals: arrivalsOf(isolates) }));

describe("leased admissions (docs/limits.md#leased-admissions), 1–8 simulated isolates", () => {
  it("never more than N admitted in any rolling 1,000 ms, whatever the arrivals and isolates", () => {
    fc.assert(
      fc.property(scenario, ({ limit, isolates, arrivals }) => {
        const { admitted } = simulate(limit, arrivals, isolates);
        expect(busiestWindow(admitted), `admissions in the busiest window, limit ${limit}`).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 300 },
    );
  });

  it("a principal within 80 % of its limit in every window is never refused, however it spreads over isolates", () => {
    fc.assert(
      fc.property(scenario, ({ limit, isolates, arrivals }) => {
        const kept = compliant(arrivals, Math.floor(0.8 * limit));
        const { refused } = simulate(limit, kept, isolates);
        expect(refused, `refusals of a compliant principal, limit ${limit}, ${isolates} isolates`).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("a busy principal in one isolate costs fewer guard calls than requests (leases hold at most 20 % of the limit, so the saving is bounded)", () => {
    // 30 a second per key, 24 a second in sequence from one isolate: every 41 ms.
    const arrivals = Array.from({ length: 240 }, (_, i) => ({ at: 1_000_000 + Math.round(i * (1000 / 24)), isolate: 0 }));
    const { admitted, refused, guardCalls } = simulate(30, arrivals, 1);
    expect([admitted.length, refused.length]).toEqual([240, 0]);
    expect(guardCalls, "guard calls for 240 requests").toBeLessThanOrEqual(216);
  });

  it("a refused principal is refused locally until exactly the guard's reset, then the guard decides again", () => {
    const guard = new SlidingWindow(10);
    const side = new LocalRefusals();
    for (let i = 0; i < 10; i++) guard.admit(5_000 + i);
    const refusal = guard.admit(5_500);
    expect([refusal.allowed, refusal.resetMs]).toEqual([false, 500]);
    side.remember("p", refusal, 5_500);
    expect(side.refusal("p", 5_999)?.resetMs).toBe(1);
    expect(side.refusal("p", 6_000)).toBeUndefined();
    expect(guard.admit(6_000).allowed, "the first admission has left the window").toBe(true);
  });

  it("a lease is spent only within LEASE_MS of asking, and its unspent admissions go back to the guard", () => {
    const guard = new SlidingWindow(50);
    const leases = new IsolateLeases();
    leases.asked("p", 0);
    leases.done("p");
    const lease = leases.asked("p", 10);
    const granted = guard.admit(10, lease);
    leases.done("p");
    expect(granted.lease?.count, "lease size").toBeGreaterThanOrEqual(2);
    leases.keep("p", granted, 10);
    expect(leases.spend("p", 10 + LEASE_MS - 1)?.allowed).toBe(true);
    expect(leases.spend("p", 10 + LEASE_MS), "expired").toBeUndefined();
    const handBack = leases.takeHandBack("p");
    expect(handBack, "the unspent admissions").toEqual({ id: granted.lease!.id, unused: granted.lease!.count - 2 });
    const before = guard.admit(20).remaining;
    guard.handBack(handBack!.id, handBack!.unused, 20);
    expect(guard.admit(20).remaining, "slots freed by the hand-back").toBe(before - 1 + handBack!.unused);
  });
});
