import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countUse, emptyUsage, USAGE_INTERVALS, type UsageInterval, usageSince } from "../../src/access/key-usage";

describe("key usage buckets (src/access/key-usage.ts)", () => {
  it("equal a per-bucket count of the same requests, kept for 24 h of minutes and 30 days of hours (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3_600_000 }), fc.boolean()), { maxLength: 200 }),
        fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
        (steps, start) => {
          const record = emptyUsage();
          let now = start;
          const seen: [number, boolean][] = [];
          for (const [gap, refused] of steps) {
            now += gap;
            countUse(record, now, refused);
            seen.push([now, refused]);
          }
          for (const interval of Object.keys(USAGE_INTERVALS) as UsageInterval[]) {
            const { ms, keepMs } = USAGE_INTERVALS[interval];
            const newest = Math.floor(now / ms) * ms;
            const expected = new Map<number, { requests: number; rateLimited: number }>();
            for (const [time, refused] of seen) {
              const bucket = Math.floor(time / ms) * ms;
              if (bucket < newest - keepMs) continue;
              const counts = expected.get(bucket) ?? { requests: 0, rateLimited: 0 };
              counts.requests += 1;
              if (refused) counts.rateLimited += 1;
              expected.set(bucket, counts);
            }
            // Buckets pruned only when a later request comes: what is kept is at least the window.
            const got = usageSince(record, interval).filter((b) => b.start >= newest - keepMs);
            expect(got, interval).toEqual([...expected].map(([bucket, counts]) => ({ start: bucket, ...counts })));
          }
        },
      ),
    );
  });
});
