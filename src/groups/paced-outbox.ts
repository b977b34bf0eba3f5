/**
 * Items for one destination, sent in order with one call in flight and at most one call per
 * `everyMs`: the first item after a quiet spell goes at once, later ones wait for the next tick
 * and go together. The calls into the destination are bounded by ticks, not by items. With
 * `everyMs` 0 it is a plain ordered channel: what arrives in the same turn, or while a call is
 * in flight, goes in the next call. A failed call loses its items (logged): a shard that sees a
 * book sequence jump asks its market for a new base, and the next summary replaces a lost one.
 */
export class PacedOutbox<T> {
  private queued: T[] = [];
  private sending = false;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly everyMs: number,
    private readonly deliver: (items: T[]) => Promise<void>,
    private readonly now: () => number = Date.now,
  ) {}

  push(...items: T[]): void {
    if (items.length === 0) return;
    this.queued.push(...items);
    this.schedule();
  }

  private schedule(): void {
    if (this.sending || this.timer !== undefined || this.queued.length === 0) return;
    // Even "at once" waits for the current turn to end: what the caller pushes in the same turn
    // (a market's stream flush and its summary, say) goes in the same call.
    const wait = Math.max(0, this.lastSentAt + this.everyMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
  }

  /** Sends what is queued now (also what a test calls instead of waiting for the tick). */
  async flush(): Promise<void> {
    if (this.sending || this.queued.length === 0) return;
    this.sending = true;
    this.lastSentAt = this.now();
    const items = this.queued;
    this.queued = [];
    try {
      await this.deliver(items);
    } catch (error) {
      console.error("paced send failed", String(error));
    } finally {
      this.sending = false;
      this.schedule();
    }
  }
}
