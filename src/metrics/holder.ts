import { metricsObject } from "../core/object-ids";
import { msSetting } from "../core/settings";
import { MetricCounts } from "./counts";

/** A holder hands its counts on at most this often (METRICS_FLUSH_MS): the metrics' delay. */
export const DEFAULT_METRICS_FLUSH_MS = 10_000;

/** `METRICS=off` (the benchmarks' switch) counts nothing. */
export function metricsOn(env: Env): boolean {
  return env.METRICS !== "off";
}

/**
 * Counts kept where they happen (an isolate, a shard, a publisher channel) and handed to the
 * Metrics object at most every METRICS_FLUSH_MS, on the holder's next event after that: far fewer
 * than one call per request. What a holder counted since its last hand-over is lost if it is
 * evicted first (docs/operations.md#metrics).
 */
export class MetricsHolder {
  readonly counts = new MetricCounts();
  private flushedAt = 0;

  /** The hand-over, if due (or `force`d, as a scrape does): a promise to wait on, or undefined. */
  flush(env: Env, now = Date.now(), force = false): Promise<void> | undefined {
    if (this.counts.empty || (!force && now - this.flushedAt < msSetting(env.METRICS_FLUSH_MS, DEFAULT_METRICS_FLUSH_MS))) return undefined;
    this.flushedAt = now;
    const delta = this.counts.take();
    return metricsObject(env)
      .report(delta)
      .catch((error: unknown) => {
        // Kept for the next hand-over: a failed one loses nothing.
        this.counts.merge(delta);
        console.error(JSON.stringify({ level: "error", message: "metrics hand-over failed", error: String(error) }));
      });
  }
}

/** This isolate's counts: HTTP requests, limits, ingest batches and settlement callbacks. */
export const isolateMetrics = new MetricsHolder();
