import { marketObject } from "../core/object-ids";
import { unwrap } from "../core/problem";
import { ensureRegistry } from "../registry/copy";
import type { MarketConfig } from "../registry/model";
import { DAY_MS } from "./intervals";
import type { DayFiles } from "./market-history";

/** Markets written at once: each is one object call that writes up to ten R2 objects. */
const CONCURRENCY = 16;
/** The daily cron writes yesterday's files at 00:05 UTC: late trades of the day's last seconds are in. */
export const DAILY_FILES_MINUTE = 5;

/**
 * Writes one UTC day's files (docs/history.md#daily-files) for the given markets, or every listed
 * one: each market writes its own, and one that did not trade that day writes none.
 */
export async function writeDailyFiles(env: Env, day: number, markets?: MarketConfig[]): Promise<DayFiles[]> {
  const chosen = markets ?? (await ensureRegistry(env)).listed;
  const results: DayFiles[] = [];
  for (let i = 0; i < chosen.length; i += CONCURRENCY) {
    const batch = chosen.slice(i, i + CONCURRENCY);
    results.push(...(await Promise.all(batch.map(async (m) => unwrap(await marketObject(env, m.symbol).writeDay(m, day))))));
  }
  return results;
}

/** The Cron Trigger's part (every minute): at 00:05 UTC, yesterday's files. */
export function dailyFilesDue(scheduledTime: number): number | undefined {
  const at = new Date(scheduledTime);
  if (at.getUTCHours() !== 0 || at.getUTCMinutes() !== DAILY_FILES_MINUTE) return undefined;
  return Math.floor(scheduledTime / DAY_MS) * DAY_MS - DAY_MS;
}
