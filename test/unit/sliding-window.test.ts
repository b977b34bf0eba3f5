import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rateLimitHeaders, SlidingWindow } from "../../src/access/sliding-window";

/** The naive model: the whole log of admitted times, counted over (t − 1000, t]. */
function naiveAdmits(log: number[], now: number, limit: number): boolean {
  return log.filter((t) => t > now - 1000 && t <= now).length < limit;
}

describe("sliding window: at most N admitted in any rolling 1,000 ms", () => {
  it("admits exactly what a naive log model admits, and never more than N in any window", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 300 }), (limit, gaps) => {
        const window = new SlidingWindow(limit);
        const log: number[] = [];
        let now = 1_000_000;
        for (const gap of gaps) {
          now += gap % 7 === 0 ? 0 : gap; // many requests share a millisecond
          const expected = naiveAdmits(log, now, limit);
          const admission = window.admit(now);
          expect(admission.allowed).toBe(expected);
          if (admission.allowed) log.push(now);
          expect(admission.remaining).toBe(limit - log.filter((t) => t > now - 1000).length);
        }
        for (const start of log) expect(log.filter((t) => t >= start && t < start + 1000).length).toBeLessThanOrEqual(limit);
      }),
    );
  });

  it("a burst of 50 in one millisecond admits exactly 10; a slot frees 1,000 ms after the first", () => {
    const window = new SlidingWindow(10);
    const results = Array.from({ length: 50 }, () => window.admit(5000));
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results[10]).toMatchObject({ allowed: false, remaining: 0, resetMs: 1000 });
    expect(window.admit(5999).allowed).toBe(false);
    expect(window.admit(6000)).toMatchObject({ allowed: true });
  });

  it("a clock that steps back counts as the latest admission's time: never more than N in a window", () => {
    const window = new SlidingWindow(3);
    expect([5000, 5001, 4990].map((t) => window.admit(t).allowed)).toEqual([true, true, true]);
    expect(window.admit(4000).allowed).toBe(false);
    expect(window.admit(5999).allowed).toBe(false);
    expect(window.admit(6000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("headers: Reset is whole seconds, at least 1 when nothing is left", () => {
    expect(rateLimitHeaders({ allowed: false, limit: 10, remaining: 0, resetMs: 20 })).toEqual({
      "RateLimit-Limit": "10",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "1",
    });
    expect(rateLimitHeaders({ allowed: true, limit: 30, remaining: 29, resetMs: 1000 })).toEqual({
      "RateLimit-Limit": "30",
      "RateLimit-Remaining": "29",
      "RateLimit-Reset": "1",
    });
  });
});
