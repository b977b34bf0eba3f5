import { marketObject } from "../core/object-ids";
import { unwrap } from "../core/problem";
import { ensureRegistry } from "../registry/copy";
import type { MarketConfig } from "../registry/model";
import { dayName } from "./daily-files";
import { DAY_MS } from "./intervals";
import type { DayFiles } from "./market-history";

/** Markets written at once: each is one object call that writes up to ten R2 objects. */
const CONCURRENCY = 16;
/** A market whose day failed (a transient R2 error, an object reset) is tried this many times in the run. */
const ATTEMPTS = 3;
/** The daily cron writes yesterday's files at 00:05 UTC: late trades of the day's last seconds are in. */
export const DAILY_FILES_MINUTE = 5;

/**
 * Writes one UTC day's files (docs/history.md#daily-files) for the given markets, or every listed
 * one: each market writes its own, and one that did not trade that day writes none. Each market
 * stands alone: one that fails is tried again in this run, and one that still fails is reported
 * (`failed`) while the others are written; its market has marked the day, so the next run writes it.
 */
export async function writeDailyFiles(env: Env, day: number, markets?: MarketConfig[]): Promise<DayFiles[]> {
  const chosen = markets ?? (await ensureRegistry(env)).listed;
  const results: DayFiles[] = [];
  for (let i = 0; i < chosen.length; i += CONCURRENCY) {
    const batch = chosen.slice(i, i + CONCURRENCY);
    results.push(...(await Promise.all(batch.map((m) => writeMarketDay(env, m, day)))));
  }
  return results;
}

async function writeMarketDay(env: Env, market: MarketConfig, day: number): Promise<DayFiles> {
  let failure = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      return unwrap(await marketObject(env, market).writeDay(market, day));
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      console.error("daily files failed", market.symbol, dayName(day), `attempt ${attempt}`, failure);
    }
  }
  return {
    symbol: market.symbol,
    date: dayName(day),
    trades: 0,
    files: [],
    failed: `not written in ${ATTEMPTS} attempts (${failure.slice(0, 200)}); the next run writes it`,
  };
}

/** The Cron Trigger's part (every minute): at 00:05 UTC, yesterday's files. */
export function dailyFilesDue(scheduledTime: number): number | undefined {
  const at = new Date(scheduledTime);
  if (at.getUTCHours() !== 0 || at.getUTCMinutes() !== DAILY_FILES_MINUTE) return undefined;
  return Math.floor(scheduledTime / DAY_MS) * DAY_MS - DAY_MS;
}
