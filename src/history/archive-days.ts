import { sleep } from "../core/cross-request-wait";
import { marketObject } from "../core/object-ids";
import { unwrap } from "../core/problem";
import { DAY_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import { logFailure } from "../logs/log";
import { ensureRegistry } from "../registry/copy";
import { type DayFiles, dayName } from "./daily-files";
import { type DayParams, dayInstanceId } from "./daily-files-workflow";
import { handDatasets } from "./datasets-workflow";

/** Markets asked at once: each is one small call to its host and an instance created a day. */
const CONCURRENCY = 16;
/** A market whose hand-off failed (a transient fault, an object reset) is tried this many times in the run. */
const ATTEMPTS = 3;
/** The daily cron hands yesterday's files on at 00:05 UTC: late trades of the day's last seconds are in. */
const DAILY_FILES_MINUTE = 5;
/** How often a waiting caller asks an instance how it is getting on. */
const POLL_MS = 100;

/**
 * Hands one UTC day's files (docs/history.md#daily-files) of the given markets, or every listed one,
 * to the `daily-files` Workflow: each market's host says whether the day traded and which past days
 * took a late trade, and each such day gets an instance. Each market stands alone: one whose host
 * does not answer is tried again in this run, and one that still fails is reported (`failed`) and
 * its day marked, so the next run hands it. With `waitMs` (the operator's call) the answers carry
 * the instances' outputs, or `pending` for those still at work by then.
 */
export async function writeDailyFiles(env: Env, day: number, markets?: MarketConfig[], waitMs = 0): Promise<DayFiles[]> {
  const chosen = markets ?? (await ensureRegistry(env)).listed;
  const results: DayFiles[] = [];
  for (let i = 0; i < chosen.length; i += CONCURRENCY) {
    const batch = chosen.slice(i, i + CONCURRENCY);
    results.push(...(await Promise.all(batch.map((m) => handMarketDay(env, m, day)))));
  }
  if (waitMs <= 0) return results.map(({ handed: _, ...answer }: DayFiles & { handed?: string[] }) => answer);
  const until = Date.now() + waitMs;
  return Promise.all(results.map((result) => waitFor(env, result, until)));
}

/** A market's day (and its marked days) handed to their instances; the answer names the day's. */
async function handMarketDay(env: Env, market: MarketConfig, day: number): Promise<DayFiles & { handed?: string[] }> {
  const result: DayFiles & { handed?: string[] } = { symbol: market.symbol, date: dayName(day), trades: 0, files: [] };
  let failure = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const { trades, again } = unwrap(await marketObject(env, market).daysToHand(market, day));
      result.trades = trades;
      const handed: string[] = [];
      for (const d of trades > 0 ? [day, ...again] : again) handed.push(await hand(env, market, d));
      // A day without trades has its book's datasets still (a day that traded has them handed by its daily files' instance).
      if (trades === 0) await handDatasets(env, market, day);
      if (trades > 0) [result.instance] = handed;
      if (again.length > 0) result.rewritten = again.map(dayName);
      if (handed.length > 0) result.pending = true;
      return { ...result, handed };
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      logFailure("daily files not handed on", { symbol: market.symbol, day: dayName(day), attempt, error: failure });
    }
  }
  // Marked on its host, if it answers now: the next run hands it.
  await marketObject(env, market)
    .markDay(market, day)
    .catch(() => undefined);
  return { ...result, failed: `not handed on in ${ATTEMPTS} attempts (${failure.slice(0, 200)}); the next run hands it` };
}

async function hand(env: Env, market: MarketConfig, day: number): Promise<string> {
  const id = dayInstanceId(market.symbol, day, Date.now());
  await env.DAILY_FILES.create({ id, params: { market, day } satisfies DayParams });
  return id;
}

/** The market's answer once its instances have ended, or `pending` at `until`; the day's own instance gives the files. */
async function waitFor(env: Env, result: DayFiles & { handed?: string[] }, until: number): Promise<DayFiles> {
  const { handed = [], ...answer } = result;
  const outputs: (DayFiles | string | undefined)[] = [];
  for (const id of handed) outputs.push(await outcome(env, id, until));
  if (outputs.some((o) => o === undefined)) return answer;
  delete answer.pending;
  const failed = outputs.filter((o): o is string => typeof o === "string");
  if (failed.length > 0) return { ...answer, failed: failed.join("; ") };
  const own = answer.instance === undefined ? undefined : (outputs[0] as DayFiles);
  return own ? { ...answer, files: own.files, ...(own.skipped ? { skipped: own.skipped } : {}), ...(own.host ? { host: own.host } : {}) } : answer;
}

/** An instance's output once complete, its error once it failed, or undefined at `until`. */
async function outcome(env: Env, id: string, until: number): Promise<DayFiles | string | undefined> {
  const instance = await env.DAILY_FILES.get(id);
  for (;;) {
    const status = await instance.status();
    if (status.status === "complete") return status.output as DayFiles;
    if (status.status === "errored" || status.status === "terminated") return `${id}: ${status.error?.message ?? status.status}`;
    if (Date.now() >= until) return undefined;
    await sleep(POLL_MS);
  }
}

/** The Cron Trigger's part (every minute): at 00:05 UTC, yesterday's files. */
export function dailyFilesDue(scheduledTime: number): number | undefined {
  const at = new Date(scheduledTime);
  if (at.getUTCHours() !== 0 || at.getUTCMinutes() !== DAILY_FILES_MINUTE) return undefined;
  return Math.floor(scheduledTime / DAY_MS) * DAY_MS - DAY_MS;
}
