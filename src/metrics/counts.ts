import { type Family, type Labels, SECONDS_BUCKETS } from "./families";

/** A histogram's state: counts per bucket (not cumulative), the sum and the count. */
export interface HistogramState {
  buckets: number[];
  sum: number;
  count: number;
}

/** Counters and histograms keyed by `family{labels}` (the exposition's own series names): what travels and is stored. */
export interface MetricDelta {
  counters: Record<string, number>;
  histograms: Record<string, HistogramState>;
}

/** Series one holder keeps at most: label values come from bounded sets (route patterns, statuses), this is the backstop. */
export const MAX_SERIES = 4_000;

function escapeLabel(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** `family{a="x",b="y"}`, labels in name order, so one series has one key. */
export function seriesKey(family: Family, labels: Labels = {}): string {
  const names = Object.keys(labels).sort();
  return names.length === 0 ? family : `${family}{${names.map((name) => `${name}="${escapeLabel(labels[name]!)}"`).join(",")}}`;
}

/** The value of label `name` in a series key (`seriesKey`'s inverse for one label), or undefined. */
export function labelIn(key: string, name: string): string | undefined {
  return new RegExp(`[{,]${name}="([^"]*)"`).exec(key)?.[1];
}

/**
 * Counts kept where they happen (an isolate, a shard, a publisher channel) until they are handed
 * on (`take`), and merged where they are gathered (the Metrics object). Adding is a map update.
 */
export class MetricCounts {
  private counters = new Map<string, number>();
  private histograms = new Map<string, HistogramState>();

  constructor(initial?: MetricDelta) {
    if (initial) this.merge(initial);
  }

  get empty(): boolean {
    return this.counters.size === 0 && this.histograms.size === 0;
  }

  add(family: Family, labels: Labels = {}, n = 1): void {
    this.addSeries(seriesKey(family, labels), n);
  }

  /** `add` by a series key made once (`seriesKey`): what a per-request counter on a hot path uses. */
  addSeries(key: string, n = 1): void {
    const held = this.counters.get(key);
    if (held === undefined && this.counters.size >= MAX_SERIES) return;
    this.counters.set(key, (held ?? 0) + n);
  }

  observe(family: Family, seconds: number, labels: Labels = {}): void {
    const key = seriesKey(family, labels);
    let state = this.histograms.get(key);
    if (!state) {
      if (this.histograms.size >= MAX_SERIES) return;
      this.histograms.set(key, (state = { buckets: SECONDS_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    }
    const bucket = SECONDS_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket !== -1) state.buckets[bucket]! += 1;
    state.sum += seconds;
    state.count += 1;
  }

  merge(delta: MetricDelta): void {
    for (const [key, n] of Object.entries(delta.counters)) this.counters.set(key, (this.counters.get(key) ?? 0) + n);
    for (const [key, add] of Object.entries(delta.histograms)) {
      const state = this.histograms.get(key) ?? { buckets: SECONDS_BUCKETS.map(() => 0), sum: 0, count: 0 };
      state.buckets = state.buckets.map((n, i) => n + (add.buckets[i] ?? 0));
      state.sum += add.sum;
      state.count += add.count;
      this.histograms.set(key, state);
    }
  }

  snapshot(): MetricDelta {
    return {
      counters: Object.fromEntries(this.counters),
      histograms: Object.fromEntries([...this.histograms].map(([k, v]) => [k, { ...v, buckets: [...v.buckets] }])),
    };
  }

  /** What was counted since the last take, and a fresh start. */
  take(): MetricDelta {
    const delta = this.snapshot();
    this.counters = new Map();
    this.histograms = new Map();
    return delta;
  }
}
