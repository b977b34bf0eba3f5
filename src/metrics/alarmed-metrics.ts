import { logFailure } from "../logs/log";
import type { Family, Labels } from "./families";
import { MetricsHolder, metricsOn } from "./holder";

/**
 * An object's own counts (a shard's frames and deliveries, a publisher channel's batches), handed
 * to the Metrics object when due: after a count, or from the object's alarm, which lets it
 * hibernate meanwhile (a timer would not). Counts nothing under METRICS=off.
 *
 * @example
 * const metrics = new AlarmedMetrics(env, ctx, (at) => alarmBy(ctx.storage, at));
 * metrics.add("mds_relay_shard_calls_total");
 * // in alarm(): await metrics.onAlarm(now, due); then the alarm for the earliest of `due`
 */
export class AlarmedMetrics {
  private readonly holder = new MetricsHolder();
  private readonly on: boolean;
  /** When the counts held are due to be handed on (the alarm's duty), if a hand-over waits. */
  private dueAt: number | undefined;
  /** Counts of `addSoon` not yet added (the current burst), by family. */
  private readonly soon = new Map<Family, number>();

  constructor(
    private readonly env: Env,
    private readonly ctx: DurableObjectState,
    private readonly arm: (at: number) => Promise<void>,
  ) {
    this.on = metricsOn(env);
  }

  add(family: Family, labels: Labels = {}, n = 1): void {
    if (!this.on) return;
    this.holder.counts.add(family, labels, n);
    this.settle();
  }

  /** Kept with the counts; handed on with the next `add` or `settle`. */
  observe(family: Family, seconds: number, labels: Labels = {}): void {
    if (this.on) this.holder.counts.observe(family, seconds, labels);
  }

  /** Counted once per burst (a publish to 1,000 sockets is one count of 1,000), not once a call. */
  addSoon(family: Family): void {
    if (!this.on) return;
    const held = this.soon.get(family) ?? 0;
    this.soon.set(family, held + 1);
    if (held === 0)
      queueMicrotask(() => {
        this.add(family, {}, this.soon.get(family) ?? 0);
        this.soon.delete(family);
      });
  }

  /** Hands the counts on if due; else, the first time in a period, arms the alarm for when they will be. */
  settle(): void {
    const dueAt = this.holder.settle(this.env, (promise) => this.ctx.waitUntil(promise));
    if (dueAt === undefined) return;
    this.dueAt = dueAt;
    this.arm(dueAt).catch((error: unknown) => logFailure("arming the metrics hand-over failed", { error }));
  }

  /** The alarm's part: the counts go now when due, or when nothing else in `due` would wake the object again; else their time joins `due`. */
  async onAlarm(now: number, due: number[]): Promise<void> {
    if (this.dueAt !== undefined && (now >= this.dueAt || due.length === 0)) {
      this.dueAt = undefined;
      await this.holder.due(this.env, now);
    } else if (this.dueAt !== undefined) due.push(this.dueAt);
  }

  /** Everything held, now (a scrape). */
  flush(): Promise<void> | undefined {
    return this.holder.flush(this.env, Date.now(), true);
  }
}
