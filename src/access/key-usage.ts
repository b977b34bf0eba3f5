/**
 * A key's usage as its guard counts it (docs/limits.md#your-keys-usage), pure: requests and 429s
 * per minute for the last 24 h and per hour for the last 30 days, only buckets that saw use.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../history/intervals";

export const USAGE_INTERVALS = {
  "1m": { ms: MINUTE_MS, keepMs: DAY_MS },
  "1h": { ms: HOUR_MS, keepMs: 30 * DAY_MS },
} as const;
export type UsageInterval = keyof typeof USAGE_INTERVALS;

/** `[start, requests, rateLimited]`: compact, as stored (at most 1,440 minutes and 720 hours a key). */
export type UsageRow = [start: number, requests: number, rateLimited: number];

export interface UsageBucket {
  start: number;
  requests: number;
  rateLimited: number;
}

/** The buckets, and when the key was last used (admitted): one row for both, written at most once a minute. */
export type UsageRecord = Record<UsageInterval, UsageRow[]> & { lastUsedAt?: number };

export function emptyUsage(): UsageRecord {
  return { "1m": [], "1h": [] };
}

/** Counts one request at `now` (a refused one is a 429 too) in both intervals, and forgets what is past keeping. */
export function countUse(record: UsageRecord, now: number, refused: boolean): void {
  for (const interval of Object.keys(USAGE_INTERVALS) as UsageInterval[]) {
    const { ms, keepMs } = USAGE_INTERVALS[interval];
    const rows = record[interval];
    const start = Math.floor(now / ms) * ms;
    let last = rows[rows.length - 1];
    // A clock that stepped back counts in the newest bucket: rows stay ascending.
    if (!last || last[0] < start) rows.push((last = [start, 0, 0]));
    last[1] += 1;
    if (refused) last[2] += 1;
    let expired = 0;
    while (expired < rows.length && rows[expired]![0] < start - keepMs) expired += 1;
    if (expired > 0) rows.splice(0, expired);
  }
}

/** The buckets of `interval` from `since` on (all kept ones when absent), oldest first. */
export function usageSince(record: UsageRecord, interval: UsageInterval, since = 0): UsageBucket[] {
  return record[interval]
    .filter(([start]) => start + USAGE_INTERVALS[interval].ms > since)
    .map(([start, requests, rateLimited]) => ({ start, requests, rateLimited }));
}
