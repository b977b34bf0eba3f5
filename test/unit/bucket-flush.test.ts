import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bucketsDue, heldFromAt, MINUTE_WRITE_AFTER_MS } from "../../src/writes/bucket-store";

const MINUTE = 60_000;
const START = 600 * MINUTE;

/**
 * A market's minute writes as the engine makes them: each commit stages its trade's minute (the
 * trade stamped `latency` before it lands), then writes if due; each minute's alarm (a moment
 * after the turn) writes if due. A write takes every staged minute before the one being traded.
 * Returns how many times each minute with a trade was written.
 */
function simulate(commits: { at: number; latency: number }[], alarmDelay: number, minutes: number): Map<number, number> {
  const events = [
    ...commits.map((c) => ({ at: c.at, stamped: c.at - c.latency })),
    ...Array.from({ length: minutes + 3 }, (_, m) => ({ at: START + (m + 1) * MINUTE + alarmDelay, stamped: undefined })),
  ].sort((a, b) => a.at - b.at);
  const staged = new Set<number>();
  const written = new Map<number, number>();
  let flushedAt = START - 1;
  for (const event of events) {
    if (event.stamped !== undefined) staged.add(Math.floor(event.stamped / MINUTE));
    if (!bucketsDue(event.at, flushedAt)) continue;
    flushedAt = event.at;
    const heldFrom = heldFromAt(event.at, false) / MINUTE;
    for (const minute of [...staged].filter((m) => m < heldFrom)) {
      written.set(minute, (written.get(minute) ?? 0) + 1);
      staged.delete(minute);
    }
  }
  return written;
}

describe("when a market writes its staged candle buckets (src/writes/bucket-store.ts bucketsDue)", () => {
  it(`a trading market writes each minute once, its stragglers in: batches stamped before the turn that land up to ${MINUTE_WRITE_AFTER_MS} ms after it (fails before: the alarm wrote at the turn, and a straggler staged the closed minute again — 1.05 to 1.28 writes a minute in bench:cost)`, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 20, max: 1_000 }),
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: 0, max: 1_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (tickMs, phase, alarmDelay, seed) => {
          const minutes = 5;
          const commits = Array.from({ length: Math.floor((minutes * MINUTE) / tickMs) }, (_, k) => ({
            at: START + phase + k * tickMs,
            latency: (seed + k * 7_919) % MINUTE_WRITE_AFTER_MS,
          }));
          const written = simulate(commits, alarmDelay, minutes);
          const traded = new Set(commits.map((c) => Math.floor((c.at - c.latency) / MINUTE)));
          for (const minute of traded) expect(written.get(minute), `writes of minute ${minute - START / MINUTE}`).toBe(1);
        },
      ),
    );
  });

  it("a market that stopped trading is written by its alarm a minute on; the first write after a start is due at once", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MINUTE - 1 }), fc.integer({ min: 0, max: 1_000 }), (lastAt, alarmDelay) => {
        // One commit in the minute, then none: the alarms of the next two turns.
        const written = simulate([{ at: START + lastAt, latency: 0 }], alarmDelay, 0);
        expect(written.get(START / MINUTE), "writes of the last traded minute by the alarms").toBe(1);
      }),
    );
    expect(bucketsDue(START + 5, 0), "the first commit after a start").toBe(true);
    expect(bucketsDue(START + MINUTE_WRITE_AFTER_MS - 1, START - 10), "a commit within the wait after the turn").toBe(false);
    expect(bucketsDue(START + MINUTE_WRITE_AFTER_MS, START - 10), "a commit once the wait is over").toBe(true);
    expect(bucketsDue(START - 5, START - 10), "a commit in the minute written").toBe(false);
  });
});
