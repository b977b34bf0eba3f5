import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BUCKET_FLUSH_LATE_MS, bucketsDue } from "../../src/market/bucket-store";

const MINUTE = 60_000;

describe("when a market writes its staged candle buckets (src/market/bucket-store.ts bucketsDue)", () => {
  it("the minute's alarm writes once the minute has turned, whatever its phase: a write at :00.050 does not hold off the next minute's alarm at :00.030 (fails before: 59.98 s < 60 s, and the write slid into the next minute's first commit)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 10_000_000 }),
        fc.integer({ min: 0, max: MINUTE - 1 }),
        fc.integer({ min: 0, max: MINUTE - 1 }),
        (minute, flushedIn, alarmIn) => {
          const flushedAt = minute * MINUTE + flushedIn;
          expect(bucketsDue((minute + 1) * MINUTE + alarmIn, flushedAt, "alarm"), "the next minute's alarm").toBe(true);
          expect(bucketsDue(minute * MINUTE + Math.max(flushedIn, alarmIn), flushedAt, "alarm"), "an alarm within the minute written").toBe(false);
        },
      ),
    );
  });

  it("a commit writes them only when the minute's alarm is late: not 100 ms into the next minute (fails before: a commit a minute after the last write wrote them, with the new minute's first trades)", () => {
    const flushedAt = 600 * MINUTE + 50;
    expect(bucketsDue(flushedAt + MINUTE + 100, flushedAt, "commit"), "a commit just after the minute's end").toBe(false);
    expect(bucketsDue(flushedAt + MINUTE + BUCKET_FLUSH_LATE_MS, flushedAt, "commit"), "a commit once the alarm is late").toBe(true);
  });
});
