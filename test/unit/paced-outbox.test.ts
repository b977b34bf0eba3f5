import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CALL_DEADLINE_MS, MAX_QUEUED, PacedOutbox } from "../../src/groups/paced-outbox";

describe("paced outbox: the relays' bound on calls (docs/design.md#group-relays)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("any arrivals are delivered once each, in order, one call in flight, at most one call per tick (fake timers)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 250 }), fc.integer({ min: 1, max: 5 })), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 30 }),
        async (arrivals, callMs) => {
          const TICK = 100;
          const calls: { at: number; items: number[] }[] = [];
          let inFlight = 0;
          let maxInFlight = 0;
          const outbox = new PacedOutbox<number>(TICK, async (items) => {
            calls.push({ at: Date.now(), items });
            inFlight += 1;
            maxInFlight = Math.max(maxInFlight, inFlight);
            await new Promise((resolve) => setTimeout(resolve, callMs));
            inFlight -= 1;
          });
          let next = 0;
          for (const [gap, count] of arrivals) {
            await vi.advanceTimersByTimeAsync(gap);
            outbox.push(...Array.from({ length: count }, () => next++));
          }
          await vi.advanceTimersByTimeAsync(10 * TICK + 10 * callMs);
          expect(
            calls.flatMap((c) => c.items),
            "every item once, in order",
          ).toEqual(Array.from({ length: next }, (_, i) => i));
          expect(maxInFlight, "calls in flight at once").toBe(1);
          for (let i = 1; i < calls.length; i++) expect(calls[i]!.at - calls[i - 1]!.at, "time between two calls").toBeGreaterThanOrEqual(TICK);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("the first item after a quiet spell goes at once", async () => {
    const at: number[] = [];
    const outbox = new PacedOutbox<string>(100, async () => {
      at.push(Date.now());
    });
    const start = Date.now();
    outbox.push("a");
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(500);
    outbox.push("b");
    await vi.advanceTimersByTimeAsync(0);
    expect(at.map((t) => t - start)).toEqual([0, 500]);
  });

  it("a destination that never answers: at most MAX_QUEUED items wait, the oldest dropped, and after CALL_DEADLINE_MS the next call goes (fails before: every item held while the call hangs, and none sent again)", async () => {
    const calls: number[][] = [];
    let answer = false;
    const outbox = new PacedOutbox<number>(50, (items) => {
      calls.push(items);
      // The first call hangs for ever; later ones are answered.
      return answer ? Promise.resolve() : new Promise(() => {});
    });
    outbox.push(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.length, "the first call is under way").toBe(1);
    for (let i = 1; i <= 3 * MAX_QUEUED; i++) outbox.push(i);
    expect(outbox.dropped, "the oldest dropped past the bound").toBe(2 * MAX_QUEUED);
    answer = true;
    await vi.advanceTimersByTimeAsync(CALL_DEADLINE_MS - 10);
    expect(calls.length, "still waiting for the hung call").toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls.length, "given up: the next call went").toBe(2);
    expect(calls[1], "the newest MAX_QUEUED items, in order").toEqual(Array.from({ length: MAX_QUEUED }, (_, i) => 2 * MAX_QUEUED + 1 + i));
  });
});
