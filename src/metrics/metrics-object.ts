import { IDLE_EVICTION_MS } from "../core/alarms";
import { type HistogramState, labelIn, MetricCounts, type MetricDelta, seriesKey } from "./counts";
import type { Family } from "./families";
import { MetricsHolder } from "./holder";
import { MeteredObject } from "./metered-object";
import { meterRequests } from "./object-meter";
import { quantile } from "./quantiles";

const TOTALS_KEY = "totals";
/**
 * The totals are stored at most this often (one row), from the alarm: not a row per report. Well
 * before an idle eviction: at 10 s, a quiet venue's one isolate reporting every 10 s found the
 * object gone before each store, and every report since the last one was lost with it.
 */
const PERSIST_EVERY_MS = IDLE_EVICTION_MS / 2;
const MINUTE_MS = 60_000;
/** The status page's window: the histograms reported in the last five minutes. */
const RECENT_MINUTES = 5;

/** Quantiles of the last five minutes, in seconds (null without observations). */
export interface RecentTimes {
  deliveryP50: number | null;
  deliveryP99: number | null;
  ackP99: number | null;
  /** Markets that failed in their host in the last 5 minutes (docs/design.md#isolation), by symbol: how many times. */
  marketFailures: Record<string, number>;
  /** Market hosts whose storage was past 80 % (or 98 %: taking no batches) of 10 GB in the last 5 minutes, by group: the highest level. */
  storageWarnings: Record<string, "80" | "98">;
  /** History files (an hour's book files) whose build failed and has not succeeded since, newest first. */
  failingFiles: FailingFile[];
}

/** A history file's build that failed (docs/history.md#book-files): its Workflow instance, when, why. */
interface FailingFile {
  id: string;
  at: number;
  error: string;
}

const FAILING_KEY = "failing-files";
/** The failing files kept: the newest; an operator sees the rest in the metric and the logs. */
const FAILING_MOST = 50;

/**
 * The venue's counters and histograms since they began (docs/operations.md#metrics): isolates,
 * shards and publisher channels hand it what they counted, each at most every METRICS_FLUSH_MS,
 * and a scrape reads the totals. One instance: its calls grow with the holders, not the requests.
 * What was reported is stored within PERSIST_EVERY_MS, before the object may be evicted for being
 * idle; a crash or a forced eviction in between loses at most that much of it.
 */
export class Metrics extends MeteredObject {
  private readonly totals: MetricCounts;
  private dirty = false;
  /** Per minute reported in, the histograms of that minute and its markets' failures (memory only: the last six minutes). */
  private readonly minutes = new Map<number, MetricCounts>();
  /** History files whose build failed and not succeeded since (one row, written on each change: rare). */
  private failing: FailingFile[];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "metrics", new MetricsHolder());
    this.totals = new MetricCounts(this.ctx.storage.kv.get<MetricDelta>(TOTALS_KEY));
    this.failing = this.ctx.storage.kv.get<FailingFile[]>(FAILING_KEY) ?? [];
  }

  /** A history file's build failed (its Workflow's report): counted, and listed until it is built. */
  async fileFailed(id: string, error: string, series: string): Promise<void> {
    await this.report({ counters: { [series]: 1 }, histograms: {} });
    this.failing = [{ id, at: Date.now(), error }, ...this.failing.filter((f) => f.id !== id)].slice(0, FAILING_MOST);
    this.ctx.storage.kv.put(FAILING_KEY, this.failing);
  }

  /** A history file was built (or found empty): counted, and no longer listed as failing. */
  async fileBuilt(id: string, series: string): Promise<void> {
    await this.report({ counters: { [series]: 1 }, histograms: {} });
    if (!this.failing.some((f) => f.id === id)) return;
    this.failing = this.failing.filter((f) => f.id !== id);
    this.ctx.storage.kv.put(FAILING_KEY, this.failing);
  }

  /** Its own rows and requests go straight into the totals (a report to itself would be a request more). */
  override afterRequest(): void {
    this.totals.merge(this.meter.holder.counts.take());
  }

  async report(delta: MetricDelta): Promise<void> {
    this.totals.merge(delta);
    const minute = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS;
    const held = this.minutes.get(minute) ?? new MetricCounts();
    const failures = Object.fromEntries(Object.entries(delta.counters).filter(([key]) => RECENT_COUNTERS.some((prefix) => key.startsWith(prefix))));
    held.merge({ counters: failures, histograms: delta.histograms });
    this.minutes.set(minute, held);
    for (const old of this.minutes.keys()) if (old <= minute - RECENT_MINUTES * MINUTE_MS) this.minutes.delete(old);
    if (this.dirty) return;
    this.dirty = true;
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + PERSIST_EVERY_MS);
  }

  totalsNow(): MetricDelta {
    return this.totals.snapshot();
  }

  /** Stream delivery p50/p99 and publish ack p99 over the last five minutes (the status page). */
  recentTimes(now = Date.now()): RecentTimes {
    const since = Math.floor(now / MINUTE_MS) * MINUTE_MS - (RECENT_MINUTES - 1) * MINUTE_MS;
    const window = new MetricCounts();
    for (const [minute, counts] of this.minutes) if (minute >= since) window.merge(counts.snapshot());
    const { histograms, counters } = window.snapshot();
    const of = (family: Family): HistogramState => histograms[seriesKey(family)] ?? { buckets: [], sum: 0, count: 0 };
    const delivery = of("mds_stream_delivery_seconds");
    const ack = of("mds_publish_ack_seconds");
    return {
      deliveryP50: quantile(0.5, delivery.buckets, delivery.count),
      deliveryP99: quantile(0.99, delivery.buckets, delivery.count),
      ackP99: quantile(0.99, ack.buckets, ack.count),
      marketFailures: failuresBySymbol(counters),
      storageWarnings: storageWarningsByGroup(counters),
      failingFiles: this.failing,
    };
  }

  override async alarm(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    this.ctx.storage.kv.put(TOTALS_KEY, this.totals.snapshot());
  }
}

const FAILURES = "mds_market_failures_total{";
const STORAGE_WARNINGS = "mds_host_storage_warnings_total{";
/** The counters kept a minute at a time for the recent window, besides the histograms. */
const RECENT_COUNTERS = [FAILURES, STORAGE_WARNINGS];

/** The `mds_host_storage_warnings_total` series of a window: each group's highest level. */
function storageWarningsByGroup(counters: Record<string, number>): Record<string, "80" | "98"> {
  const byGroup: Record<string, "80" | "98"> = {};
  for (const key of Object.keys(counters)) {
    if (!key.startsWith(STORAGE_WARNINGS)) continue;
    const group = labelIn(key, "group");
    const level = labelIn(key, "level") === "98" ? "98" : "80";
    if (group && byGroup[group] !== "98") byGroup[group] = level;
  }
  return byGroup;
}

/** The `mds_market_failures_total` series of a window, added up by symbol. */
function failuresBySymbol(counters: Record<string, number>): Record<string, number> {
  const bySymbol: Record<string, number> = {};
  for (const [key, n] of Object.entries(counters)) {
    const symbol = key.startsWith(FAILURES) ? labelIn(key, "symbol") : undefined;
    if (symbol) bySymbol[symbol] = (bySymbol[symbol] ?? 0) + n;
  }
  return bySymbol;
}

meterRequests(Metrics, ["report", "totalsNow", "recentTimes", "fileFailed", "fileBuilt", "alarm"]);
