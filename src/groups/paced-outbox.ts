import { withTimeout } from "../core/time-limit";
import { logFailure } from "../logs/log";

/**
 * Items for one destination, sent in order with one call in flight and at most one call per
 * `everyMs`: the first item after a quiet spell goes at once, later ones wait for the next tick
 * and go together. The calls into the destination are bounded by ticks, not by items. With
 * `everyMs` 0 it is a plain ordered channel: what arrives in the same turn, or while a call is
 * in flight, goes in the next call. A failed call loses its items (logged): a shard that sees a
 * book sequence jump asks its market for a new base, and the next summary replaces a lost one.
 *
 * Bounded whatever the destination does: a call not answered in CALL_DEADLINE_MS counts as failed
 * (the next goes), and at most MAX_QUEUED items wait — past that the oldest are dropped (counted
 * in `dropped`), as a failed call's would be. A hung shard costs its relay a bounded memory.
 */
/** Items that may wait for one destination: a few seconds of a busy group's events. */
export const MAX_QUEUED = 8_192;
/** A call into the destination unanswered this long is given up (its items lost, as a failure's). */
export const CALL_DEADLINE_MS = 10_000;

export class PacedOutbox<T> {
  private queued: T[] = [];
  private sending = false;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Items dropped because MAX_QUEUED waited (the oldest first). */
  dropped = 0;

  constructor(
    private readonly everyMs: number,
    private readonly deliver: (items: T[]) => Promise<void>,
    private readonly now: () => number = Date.now,
  ) {}

  push(...items: T[]): void {
    if (items.length === 0) return;
    this.queued.push(...items);
    if (this.queued.length > MAX_QUEUED) {
      const over = this.queued.length - MAX_QUEUED;
      this.queued.splice(0, over);
      if (this.dropped === 0) logFailure("paced outbox full: its oldest items dropped", { most: MAX_QUEUED });
      this.dropped += over;
    }
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
      await withTimeout(this.deliver(items), CALL_DEADLINE_MS);
    } catch (error) {
      logFailure("paced send failed", { error });
    } finally {
      this.sending = false;
      this.schedule();
    }
  }
}
