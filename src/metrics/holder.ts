import { metricsObject } from "../core/object-ids";
import { msSetting } from "../core/settings";
import { logFailure } from "../logs/log";
import { MetricCounts } from "./counts";

/** A holder hands its counts on at most this often (METRICS_FLUSH_MS): the metrics' delay. */
const DEFAULT_METRICS_FLUSH_MS = 10_000;

/** `METRICS=off` (the benchmarks' switch) counts nothing. */
export function metricsOn(env: Env): boolean {
  return env.METRICS !== "off";
}

/**
 * Counts kept where they happen (an isolate, a shard, a publisher channel) and handed to the
 * Metrics object at most every METRICS_FLUSH_MS: far fewer than one call per request, and never
 * later than that after the count (`settle`). What a holder counted since its last hand-over is
 * lost if it is evicted first (docs/operations.md#metrics).
 */
export class MetricsHolder {
  readonly counts = new MetricCounts();
  private flushedAt = 0;
  /** A hand-over is waiting for its time (one at a time). */
  private waiting = false;

  /** When the counts were last handed on (the Analytics Engine points go with them). */
  get handedOnAt(): number {
    return this.flushedAt;
  }

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
        logFailure("metrics hand-over failed", { error });
      });
  }

  /**
   * After counting: hands the counts on now if due (through `waitUntil`); else, the first time in
   * a period, says when they will be due, for the holder to wake then (an isolate with a timer, an
   * object with its alarm, which does not keep it awake) and call `due`. Undefined otherwise.
   */
  settle(env: Env, waitUntil: (promise: Promise<unknown>) => void, now = Date.now()): number | undefined {
    const flushed = this.flush(env, now);
    if (flushed) {
      this.waiting = false;
      waitUntil(flushed);
      return undefined;
    }
    if (this.waiting || this.counts.empty) return undefined;
    this.waiting = true;
    return this.flushedAt + msSetting(env.METRICS_FLUSH_MS, DEFAULT_METRICS_FLUSH_MS);
  }

  /**
   * For a count made with no request to `settle` it (the Analytics Engine points a window's timer
   * wrote): hands on what is held now, unless a wake-up `settle` asked for will.
   */
  handOnUnlessWaiting(env: Env, now = Date.now()): Promise<void> | undefined {
    return this.waiting ? undefined : this.flush(env, now, true);
  }

  /** The wake-up `settle` asked for: hands on whatever is held. */
  due(env: Env, now = Date.now()): Promise<void> | undefined {
    this.waiting = false;
    return this.flush(env, now, true);
  }
}

/** This isolate's counts: HTTP requests, limits, ingest batches and settlement callbacks. */
export const isolateMetrics = new MetricsHolder();
