/**
 * A key's usage (docs/limits.md#your-keys-usage), pure: requests and 429s per minute for the last
 * 24 h and per hour for the last 30 days, only buckets that saw use. Its ledger counts it
 * (`usage-ledger.ts`); the record below is what a key's guard stored before, read until past keeping.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../domain/intervals";

export const USAGE_INTERVALS = {
  "1m": { ms: MINUTE_MS, keepMs: DAY_MS },
  "1h": { ms: HOUR_MS, keepMs: 30 * DAY_MS },
} as const;
export type UsageInterval = keyof typeof USAGE_INTERVALS;

/** `[start, requests, rateLimited]`: compact, as stored (at most 1,440 minutes and 720 hours a key). */
type UsageRow = [start: number, requests: number, rateLimited: number];

export interface UsageBucket {
  start: number;
  requests: number;
  rateLimited: number;
}

/** The buckets, and when the key was last used (admitted), as a key's guard stored them before its ledger counted. */
export type UsageRecord = Record<UsageInterval, UsageRow[]> & { lastUsedAt?: number };

/** The buckets of `interval` from `since` on (all kept ones when absent), oldest first. */
export function usageSince(record: UsageRecord, interval: UsageInterval, since = 0): UsageBucket[] {
  return record[interval]
    .filter(([start]) => start + USAGE_INTERVALS[interval].ms > since)
    .map(([start, requests, rateLimited]) => ({ start, requests, rateLimited }));
}
