import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { USAGE_INTERVALS, type UsageInterval } from "../../src/access/key-usage";
import { addToParts, type BucketPart, bucketStart, type KeyCounts, PendingUsage, sumBuckets } from "../../src/access/usage-ledger";

describe("a usage ledger's buckets (src/access/usage-ledger.ts)", () => {
  it("flushed at any moments into parts of a bounded size, equal a per-key, per-bucket count of the same requests (property)", () => {
    const MAX = 150;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("mk_a", "mk_b", "pk_c", "mk_d", "mk_e"), fc.integer({ min: 0, max: 400_000 }), fc.boolean(), fc.boolean()), {
          maxLength: 150,
        }),
        fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
        (steps, start) => {
          const pending = new PendingUsage();
          const stored = new Map<string, BucketPart[]>();
          const flush = () => {
            for (const [interval, starts] of pending.take())
              for (const [bucket, held] of starts) {
                const parts = stored.get(`${interval}:${bucket}`) ?? [];
                addToParts(parts, held, MAX);
                stored.set(`${interval}:${bucket}`, parts);
              }
          };
          const expected = new Map<string, KeyCounts>();
          let now = start;
          for (const [keyId, gap, refused, flushNow] of steps) {
            now += gap;
            pending.count(keyId, now, refused);
            for (const interval of Object.keys(USAGE_INTERVALS) as UsageInterval[]) {
              const id = `${interval}:${bucketStart(interval, now)}:${keyId}`;
              const [requests, limited, last] = expected.get(id) ?? [0, 0, 0];
              expected.set(id, [requests + 1, limited + (refused ? 1 : 0), refused ? last : now]);
            }
            if (flushNow) flush();
          }
          flush();
          expect(pending.empty, "nothing held after a flush").toBe(true);
          const got = new Map<string, KeyCounts>();
          for (const [bucket, parts] of stored)
            for (const { part, counts } of parts) {
              expect(JSON.stringify(counts).length, `${bucket} part ${part}'s size`).toBeLessThanOrEqual(MAX);
              for (const [keyId, c] of Object.entries(counts)) {
                expect(got.has(`${bucket}:${keyId}`), `${keyId} in one part of ${bucket}`).toBe(false);
                got.set(`${bucket}:${keyId}`, c);
              }
            }
          expect(got).toEqual(expected);
        },
      ),
    );
  });

  it("sums two sources' buckets of one start and keeps them oldest first", () => {
    expect(
      sumBuckets(
        [
          { start: 120, requests: 2, rateLimited: 1 },
          { start: 0, requests: 1, rateLimited: 0 },
        ],
        [{ start: 120, requests: 3, rateLimited: 0 }],
      ),
    ).toEqual([
      { start: 0, requests: 1, rateLimited: 0 },
      { start: 120, requests: 5, rateLimited: 1 },
    ]);
  });
});
