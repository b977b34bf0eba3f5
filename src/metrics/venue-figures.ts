import { metricsObject, streamHub } from "../core/object-ids";
import { logFailure } from "../logs/log";
import { everyShard } from "../streams/every-shard";
import type { RecentTimes } from "./metrics-object";

/** Open stream connections by dialect, read from every shard (each hands its counts on first). */
export async function connectionsByDialect(env: Env): Promise<Record<string, number>> {
  const counts = await Promise.all((await everyShard(env)).map((shard) => streamHub(env, shard).scrape()));
  const byDialect: Record<string, number> = { native: 0, binance: 0 };
  for (const shard of counts) for (const [dialect, n] of Object.entries(shard)) byDialect[dialect] = (byDialect[dialect] ?? 0) + n;
  return byDialect;
}

/** What the status page shows of the streams and publishers: delivery and ack times of the last five minutes, open connections. */
export interface StatusFigures extends RecentTimes {
  connections: number;
}

/**
 * The status page's figures are read at most this often per isolate, whether the read succeeded or
 * failed: a page view is not a call to every shard and one more, least of all while one fails.
 */
const FIGURES_MAX_AGE_MS = 5_000;
let held: { at: number; figures: StatusFigures | null } | undefined;
/**
 * The figures, at most FIGURES_MAX_AGE_MS old; null when they could not be read (the page says so).
 * Views that arrive together each read: a read shared between requests would hang every later
 * view if the request that began it ended first (the runtime drops its answer).
 */
export async function statusFigures(env: Env, now = Date.now()): Promise<StatusFigures | null> {
  if (held && now - held.at < FIGURES_MAX_AGE_MS) return held.figures;
  const figures = await readFigures(env);
  held = { at: now, figures };
  return figures;
}

async function readFigures(env: Env): Promise<StatusFigures | null> {
  try {
    // The shards hand on their counts as they answer, so the times read after them include theirs.
    const connections = await connectionsByDialect(env);
    const recent = (await metricsObject(env).recentTimes()) as RecentTimes;
    return { ...recent, connections: Object.values(connections).reduce((a, b) => a + b, 0) };
  } catch (error) {
    logFailure("status figures unavailable", { error });
    return null;
  }
}
