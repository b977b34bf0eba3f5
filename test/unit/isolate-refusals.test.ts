import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LocalRefusals } from "../../src/access/local-refusals";
import { SlidingWindow } from "../../src/access/sliding-window";

/**
 * One principal's requests spread over simulated isolates, each with its own `LocalRefusals` (the
 * production path of `admit()`), all asking one guard's window, with the clock and the isolate
 * chosen by the test. Requests at one isolate are in sequence (each answered before the next).
 */
async function simulate(limit: number, arrivals: { at: number; isolate: number }[], isolates: number) {
  const guard = new SlidingWindow(limit);
  const sides = Array.from({ length: isolates }, () => new LocalRefusals());
  const admitted: number[] = [];
  const refused: number[] = [];
  for (const { at, isolate } of arrivals) {
    const admission = await sides[isolate]!.admit(
      "p",
      at,
      async () => guard.admit(at),
      () => at,
    );
    (admission.allowed ? admitted : refused).push(at);
  }
  return { admitted, refused };
}

/**
 * A burst from one address into one isolate: request i arrives at `arrivals[i]` whether or not
 * earlier ones were answered (a flood does not wait), and the guard answers it `latencies[i]` ms
 * after it asked. Events run in time order on an injected clock; no wall-clock time passes.
 */
async function burst(limit: number, arrivals: number[], latencies: number[]) {
  const guard = new SlidingWindow(limit);
  const limiter = new LocalRefusals();
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
        const ask = async () => {
          const answer = guard.admit(now);
          await new Promise<void>((resolve) => events.push({ at: now + latencies[i % latencies.length]!, run: resolve }));
          return answer;
        };
        runs.push(limiter.admit("p", now, ask, () => now).then((a) => void (a.allowed && (admitted += 1))));
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

describe("an exact limit over isolates that refuse locally (docs/limits.md), 1–8 simulated isolates", () => {
  it("never more than N admitted in any rolling 1,000 ms, whatever the arrivals and isolates", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ limit, isolates, arrivals }) => {
        const { admitted } = await simulate(limit, arrivals, isolates);
        expect(busiestWindow(admitted), `admissions in the busiest window, limit ${limit}`).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 300 },
    );
  });

  it("a principal within its limit in every window is never refused, however it spreads over isolates", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ limit, isolates, arrivals }) => {
        const kept = compliant(arrivals, limit);
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
      { numRuns: 300, examples: [[{ limit: 10, gaps: [0, 1], latencies: [0, 19] }]] },
    );
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
});
