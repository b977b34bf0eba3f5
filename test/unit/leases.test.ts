import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { IsolateLimiter, MAX_LEASE_WAIT_MS } from "../../src/access/isolate-limiter";
import { IsolateLeases } from "../../src/access/leases";
import { LocalRefusals } from "../../src/access/local-refusals";
import { LEASE_MS, SlidingWindow } from "../../src/access/sliding-window";

/**
 * One principal's requests spread over simulated isolates, each with its own `IsolateLimiter` (the
 * production path of `admit()`), all asking one guard's window, with the clock and the isolate
 * chosen by the test. Requests at one isolate are in sequence (each answered before the next).
 */
async function simulate(limit: number, arrivals: { at: number; isolate: number }[], isolates: number) {
  const guard = new SlidingWindow(limit);
  const sides = Array.from({ length: isolates }, () => new IsolateLimiter());
  const admitted: number[] = [];
  const refused: { at: number; locally: boolean }[] = [];
  let guardCalls = 0;
  for (const { at, isolate } of arrivals) {
    let asked = false;
    const admission = await sides[isolate]!.admit(
      "p",
      at,
      async ({ lease, handBack }) => {
        asked = true;
        guardCalls += 1;
        if (handBack) guard.handBack(handBack.id, handBack.unused, at);
        return guard.admit(at, lease);
      },
      () => at,
    );
    if (admission.allowed) admitted.push(at);
    else refused.push({ at, locally: !asked });
  }
  return { admitted, refused, guardCalls };
}

/**
 * A burst from one address into one isolate: request i arrives at `arrivals[i]` whether or not
 * earlier ones were answered (a flood does not wait), and the guard answers it `latencies[i]` ms
 * after it asked. Events run in time order on an injected clock; no wall-clock time passes.
 */
async function burst(limit: number, arrivals: number[], latencies: number[]) {
  const guard = new SlidingWindow(limit);
  const limiter = new IsolateLimiter();
  let now = 0;
  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  const events: { at: number; run: () => void }[] = [];
  let admitted = 0;
  const runs: Promise<void>[] = [];
  arrivals.forEach((at, i) => {
    events.push({
      at,
      run: () => {
        const ask = async ({ lease, handBack }: { lease: number; handBack?: { id: string; unused: number } }) => {
          if (handBack) guard.handBack(handBack.id, handBack.unused, now);
          const answer = guard.admit(now, lease);
          await new Promise<void>((resolve) => events.push({ at: now + latencies[i % latencies.length]!, run: resolve }));
          return answer;
        };
        // A request waiting for another's lease polls on its own timer: an event of the simulation.
        const wait = (ms: number) => new Promise<void>((resolve) => events.push({ at: now + ms, run: resolve }));
        runs.push(limiter.admit("p", now, ask, () => now, wait).then((a) => void (a.allowed && (admitted += 1))));
      },
    });
  });
  while (events.length > 0) {
    events.sort((a, b) => a.at - b.at);
    const next = events.shift()!;
    now = next.at;
    next.run();
    await settle();
  }
  await Promise.all(runs);
  return admitted;
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
  it("never more than N admitted in any rolling 1,000 ms, whatever the arrivals and isolates", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ limit, isolates, arrivals }) => {
        const { admitted } = await simulate(limit, arrivals, isolates);
        expect(busiestWindow(admitted), `admissions in the busiest window, limit ${limit}`).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 300 },
    );
  });

  it("a principal within 80 % of its limit in every window is never refused, however it spreads over isolates", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ limit, isolates, arrivals }) => {
        const kept = compliant(arrivals, Math.floor(0.8 * limit));
        const { refused } = await simulate(limit, kept, isolates);
        expect(refused, `refusals of a compliant principal, limit ${limit}, ${isolates} isolates`).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("a fresh address's first burst gets exactly N in its first second, whatever its pace and the guard's latency (cold isolate)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          limit: fc.constantFrom(10, 30),
          gaps: fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 1, maxLength: 20 }),
          latencies: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 20 }),
        }),
        async ({ limit, gaps, latencies }) => {
          // Four times the limit, arriving within 600 ms: all of it inside the first rolling second.
          let at = 0;
          const arrivals = Array.from({ length: 4 * limit }, (_, i) => (at += gaps[i % gaps.length]!));
          fc.pre(at < 600);
          const admitted = await burst(limit, arrivals, latencies);
          expect(admitted, `admitted of a burst of ${arrivals.length} in ${at} ms, limit ${limit}`).toBe(limit);
        },
      ),
      // The lease asked by the burst's second request came back after the burst: 9 of 10 before requests waited for it.
      { numRuns: 300, examples: [[{ limit: 10, gaps: [0, 1], latencies: [0, 19] }]] },
    );
  });

  it("a busy principal in one isolate costs fewer guard calls than requests (leases hold at most 20 % of the limit, so the saving is bounded)", async () => {
    // 30 a second per key, 24 a second in sequence from one isolate: every 41 ms.
    const arrivals = Array.from({ length: 240 }, (_, i) => ({ at: 1_000_000 + Math.round(i * (1000 / 24)), isolate: 0 }));
    const { admitted, refused, guardCalls } = await simulate(30, arrivals, 1);
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

  it("a lease ask whose request ended unanswered does not hold the principal's later requests (before: every later request hung, and the runtime answered 500)", async () => {
    vi.useFakeTimers();
    try {
      const guard = new SlidingWindow(10);
      const limiter = new IsolateLimiter();
      let now = 0;
      const clock = () => now;
      const answer = async ({ lease }: { lease: number }) => guard.admit(now, lease);
      expect((await limiter.admit("ip:203.0.113.70", now, answer, clock)).allowed).toBe(true);
      now = 10;
      // Asks a lease (the principal is busy here); the runtime drops its answer: it never settles.
      void limiter.admit("ip:203.0.113.70", now, () => new Promise(() => {}), clock);
      now = 20;
      let answered = false;
      const later = limiter.admit("ip:203.0.113.70", now, answer, clock).then((a) => {
        answered = true;
        return a;
      });
      now = 20 + MAX_LEASE_WAIT_MS;
      await vi.advanceTimersByTimeAsync(MAX_LEASE_WAIT_MS);
      expect(answered, "a later request is answered within MAX_LEASE_WAIT_MS").toBe(true);
      expect((await later).allowed).toBe(true);
      // And the one after it does not wait at all, and may lease again.
      now += 10;
      expect((await limiter.admit("ip:203.0.113.70", now, answer, clock)).allowed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
