import { SECONDS_BUCKETS } from "./families";

/**
 * The q-quantile of a histogram (per-bucket counts, not cumulative), as Prometheus'
 * `histogram_quantile` estimates it: linear within the bucket that holds it, the lowest bucket
 * from 0; past the last bound, that bound. Null without observations.
 */
export function quantile(q: number, buckets: readonly number[], count: number): number | null {
  if (count === 0) return null;
  const rank = q * count;
  let below = 0;
  for (let i = 0; i < SECONDS_BUCKETS.length; i++) {
    const inBucket = buckets[i] ?? 0;
    if (below + inBucket >= rank && inBucket > 0) {
      const lower = i === 0 ? 0 : SECONDS_BUCKETS[i - 1]!;
      return lower + (SECONDS_BUCKETS[i]! - lower) * ((rank - below) / inBucket);
    }
    below += inBucket;
  }
  return SECONDS_BUCKETS[SECONDS_BUCKETS.length - 1]!;
}
