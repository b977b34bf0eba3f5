import type { MetricDelta } from "./counts";
import { FAMILIES, type Family, SECONDS_BUCKETS } from "./families";

/** A gauge's value at the scrape: read then, never stored. */
export interface GaugeValue {
  family: Family;
  labels: string;
  value: number;
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const familyOf = (key: string) => key.split("{", 1)[0] as Family;
const labelsOf = (key: string) => (key.includes("{") ? key.slice(key.indexOf("{") + 1, -1) : "");
const withLabel = (labels: string, extra: string) => `{${labels ? `${labels},` : ""}${extra}}`;
const braces = (labels: string) => (labels ? `{${labels}}` : "");

/**
 * The Prometheus text format (0.0.4): each family once, with its HELP and TYPE, its series in key
 * order; a histogram's buckets cumulative, ending at `+Inf`, then `_sum` and `_count`.
 */
export function exposition(totals: MetricDelta, gauges: readonly GaugeValue[]): string {
  const lines: string[] = [];
  for (const family of Object.keys(FAMILIES) as Family[]) {
    const { type, help } = FAMILIES[family];
    lines.push(`# HELP ${family} ${help}`, `# TYPE ${family} ${type}`);
    if (type === "gauge") {
      for (const g of gauges.filter((g) => g.family === family)) lines.push(`${family}${braces(g.labels)} ${g.value}`);
    } else if (type === "counter") {
      const keys = Object.keys(totals.counters)
        .filter((k) => familyOf(k) === family)
        .sort();
      for (const key of keys) lines.push(`${key} ${totals.counters[key]}`);
    } else {
      const keys = Object.keys(totals.histograms)
        .filter((k) => familyOf(k) === family)
        .sort();
      for (const key of keys) {
        const state = totals.histograms[key]!;
        const labels = labelsOf(key);
        let cumulative = 0;
        SECONDS_BUCKETS.forEach((bound, i) => {
          cumulative += state.buckets[i] ?? 0;
          lines.push(`${family}_bucket${withLabel(labels, `le="${bound}"`)} ${cumulative}`);
        });
        lines.push(`${family}_bucket${withLabel(labels, 'le="+Inf"')} ${state.count}`);
        lines.push(`${family}_sum${braces(labels)} ${state.sum}`, `${family}_count${braces(labels)} ${state.count}`);
      }
    }
  }
  return `${lines.join("\n")}\n`;
}
