/**
 * A key's usage (docs/limits.md#your-keys-usage), pure: requests and 429s per minute for the last
 * 24 h and per hour for the last 30 days, only buckets that saw use. Its ledger counts it
 * (`usage-ledger.ts`).
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../domain/intervals";

export const USAGE_INTERVALS = {
  "1m": { ms: MINUTE_MS, keepMs: DAY_MS },
  "1h": { ms: HOUR_MS, keepMs: 30 * DAY_MS },
} as const;
export type UsageInterval = keyof typeof USAGE_INTERVALS;

export interface UsageBucket {
  start: number;
  requests: number;
  rateLimited: number;
}
