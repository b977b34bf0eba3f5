import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { HostCalls } from "../../src/publish/host-calls";

describe("a channel's calls into a market host (src/publish/host-calls.ts)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("any arrivals are sent once each, in order, each answered with its own answer, at most one call per 20 ms on average (fake timers)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 5 })), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 150 }),
        async (arrivals, callMs) => {
          const MS = 20;
          const calls: { at: number; items: number[] }[] = [];
          const hostCalls = new HostCalls<number, string>(MS, async (items) => {
            calls.push({ at: Date.now(), items });
            await new Promise((resolve) => setTimeout(resolve, callMs)); // the answer waits for the host's tick
            return items.map((item) => `answer ${item}`);
          });
          const answers: Promise<string>[] = [];
          let next = 0;
          for (const [gap, count] of arrivals) {
            await vi.advanceTimersByTimeAsync(gap);
            for (let i = 0; i < count; i++) answers.push(hostCalls.call(next++));
          }
          await vi.advanceTimersByTimeAsync(MS + callMs + 10);
          expect(
            calls.flatMap((c) => c.items),
            "every batch once, in order",
          ).toEqual(Array.from({ length: next }, (_, i) => i));
          expect(await Promise.all(answers), "each batch its own answer").toEqual(Array.from({ length: next }, (_, i) => `answer ${i}`));
          // At most two calls in any 20 ms, and one per 20 ms over the run.
          for (let i = 2; i < calls.length; i++)
            expect(calls[i]!.at - calls[i - 2]!.at, "time between a call and the one two before it").toBeGreaterThanOrEqual(MS);
          if (calls.length > 1) expect(calls.length - 1, "calls after the first").toBeLessThanOrEqual(Math.floor((calls.at(-1)!.at - calls[0]!.at) / MS) + 1);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("a batch after a quiet spell goes at once, not after the gathering (before: every first batch waited 20 ms)", async () => {
    const sentAt: number[] = [];
    const hostCalls = new HostCalls<number, number>(20, async (items) => {
      sentAt.push(Date.now());
      return items;
    });
    const start = Date.now();
    void hostCalls.call(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(
      sentAt.map((t) => t - start),
      "the first batch's call",
    ).toEqual([0]);
    await vi.advanceTimersByTimeAsync(30);
    void hostCalls.call(2);
    await vi.advanceTimersByTimeAsync(0);
    expect(
      sentAt.map((t) => t - start),
      "a batch 30 ms later, after a quiet spell",
    ).toEqual([0, 30]);
  });

  it("batches every 20 ms, one of them 15 ms late: the ones after it are not held to its beat (before: each waited 15 ms ever after)", async () => {
    const waits: number[] = [];
    let queuedAt = 0;
    const hostCalls = new HostCalls<number, number>(20, async (items) => {
      waits.push(Date.now() - queuedAt);
      return items;
    });
    const start = Date.now();
    for (let k = 0; k < 10; k++) {
      const at = start + 20 * k + (k === 3 ? 15 : 0);
      await vi.advanceTimersByTimeAsync(at - Date.now());
      queuedAt = Date.now();
      void hostCalls.call(k);
      await vi.advanceTimersByTimeAsync(k === 3 ? 4 : 19);
    }
    expect(waits, "each batch's wait for its call (ms)").toEqual(Array.from({ length: 10 }, () => 0));
  });

  it("a failed call fails each of its batches, and the next call goes on", async () => {
    let fail = true;
    const hostCalls = new HostCalls<number, number>(20, async (items) => {
      if (fail) throw new Error("the host failed");
      return items;
    });
    const first = [hostCalls.call(1), hostCalls.call(2)].map((p) =>
      p.then(
        () => "answered",
        (error: Error) => error.message,
      ),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(await Promise.all(first), "the failed call's batches").toEqual(["the host failed", "the host failed"]);
    fail = false;
    const second = hostCalls.call(3);
    await vi.advanceTimersByTimeAsync(20);
    expect(await second, "the next call's batch").toBe(3);
  });
});
