import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RESUME_BYTES_PER_MARKET, RESUME_BYTES_PER_SHARD, RESUME_MESSAGES, ResumeLog } from "../../src/streams/resume-log";

const delta = (first: number, last: number) => ({ type: "delta" as const, firstSequence: first, sequence: last, bids: [], asks: [] });

describe("the shard's resume log (docs/streams.md#resuming)", () => {
  it("continues a client's book only with messages that reach the copy unbroken", () => {
    const log = new ResumeLog();
    log.remember("X", delta(11, 12), "a");
    log.remember("X", delta(13, 15), "b");
    log.remember("X", delta(16, 16), "c");
    expect(log.continuation("X", 16, 16)).toEqual([]);
    expect(log.continuation("X", 12, 16)).toEqual(["b", "c"]);
    expect(log.continuation("X", 10, 16)).toEqual(["a", "b", "c"]);
    expect(log.continuation("X", 13, 16), "mid-message: no unbroken start").toBeUndefined();
    expect(log.continuation("X", 9, 16), "older than kept").toBeUndefined();
    expect(log.continuation("X", 12, 17), "the copy moved past what is kept").toBeUndefined();
    log.remember("X", delta(20, 21), "gap");
    expect(log.continuation("X", 12, 21), "a break starts over").toBeUndefined();
    expect(log.continuation("X", 19, 21)).toEqual(["gap"]);
    log.remember("X", { type: "snapshot", sequence: 30, bids: [], asks: [] }, "s");
    expect(log.continuation("X", 21, 30)).toBeUndefined();
  });

  it("stays within its bounds in messages and bytes per market and in bytes per shard, whatever is pushed", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ market: fc.integer({ min: 0, max: 200 }), bytes: fc.integer({ min: 1, max: 200_000 }) }), { maxLength: 400 }),
        (pushes) => {
          const log = new ResumeLog();
          const next = new Map<number, number>();
          const perMarket = new Map<number, number[]>();
          for (const { market, bytes } of pushes) {
            const first = next.get(market) ?? 1;
            next.set(market, first + 1);
            log.remember(`M${market}`, delta(first, first), "x".repeat(bytes));
            perMarket.set(market, [...(perMarket.get(market) ?? []), first]);
            expect(log.size, "bytes per shard").toBeLessThanOrEqual(RESUME_BYTES_PER_SHARD);
          }
          for (const [market, sequences] of perMarket) {
            const last = sequences.at(-1)!;
            let kept = 0;
            for (let from = last - 1; from >= last - sequences.length && log.continuation(`M${market}`, from, last) !== undefined; from--) kept += 1;
            expect(kept, `M${market} keeps at most ${RESUME_MESSAGES}`).toBeLessThanOrEqual(RESUME_MESSAGES);
            const texts = log.continuation(`M${market}`, last - kept, last) ?? [];
            expect(
              texts.reduce((n, t) => n + t.length, 0),
              `M${market} bytes`,
            ).toBeLessThanOrEqual(RESUME_BYTES_PER_MARKET);
          }
        },
      ),
      { numRuns: 50 },
    );
  });
});
