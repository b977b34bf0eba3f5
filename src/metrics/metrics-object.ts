import { DurableObject } from "cloudflare:workers";
import { MetricCounts, type MetricDelta } from "./counts";

const TOTALS_KEY = "totals";

/**
 * The venue's counters and histograms since they began (docs/operations.md#metrics): isolates,
 * shards and publisher channels hand it what they counted, each at most every METRICS_FLUSH_MS,
 * and a scrape reads the totals. One instance: its calls grow with the holders, not the requests.
 * The totals are stored with every report (one row), so an eviction loses nothing here.
 */
export class Metrics extends DurableObject<Env> {
  private readonly totals: MetricCounts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.totals = new MetricCounts(ctx.storage.kv.get<MetricDelta>(TOTALS_KEY));
  }

  report(delta: MetricDelta): void {
    this.totals.merge(delta);
    this.ctx.storage.kv.put(TOTALS_KEY, this.totals.snapshot());
  }

  totalsNow(): MetricDelta {
    return this.totals.snapshot();
  }
}
