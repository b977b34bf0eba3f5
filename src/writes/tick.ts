/**
 * The write path's clock (docs/design.md#the-write-path): what a single writer stages between
 * commits is written together, at most once per tick, and each caller's answer waits for the
 * commit that made its work durable.
 *
 * The first work after a quiet spell commits at once (a quiet market pays no delay); work that
 * comes within `ms` of the last commit waits for the tick and commits with everything staged
 * meanwhile — a market taking 50 batches a second writes 10 times a second, not 50. With `ms` 0
 * every piece of work commits at once.
 *
 * Work is staged under a key (a group's market): a commit may answer that some keys' parts failed
 * while the rest is durable, and only those keys' callers get the error (docs/design.md#isolation).
 *
 * @example
 * const tick = new Tick(() => 100, () => store.transaction(writeStaged));
 * stage(batch); // in memory
 * await tick.committed("BTCUSDT"); // durable: answer now
 */
export class Tick {
  private waiters: { key: string; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastCommitAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** The tick's length in ms (read each time: a test may change it). */
    private readonly ms: () => number,
    /**
     * Writes everything staged since the last commit, synchronously. Returns the keys whose part
     * failed (their waiters get the error, the rest are durable); a throw fails every waiter.
     */
    private readonly commit: () => ReadonlyMap<string, unknown> | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether work is staged and not yet committed. */
  get pending(): boolean {
    return this.waiters.length > 0;
  }

  /** Waits for the commit of what was just staged under `key`: at once after a quiet spell, else at the tick. */
  committed(key = ""): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ key, resolve, reject }));
    const due = this.lastCommitAt + this.ms();
    if (this.timer === undefined) {
      if (this.now() >= due) this.commitNow();
      else this.timer = setTimeout(() => this.commitNow(), due - this.now());
    }
    return done;
  }

  /** One key's staged work will not be written (its writer dropped it): its waiters get `error` now. */
  fail(key: string, error: unknown): void {
    const kept: typeof this.waiters = [];
    for (const waiter of this.waiters) {
      if (waiter.key === key) waiter.reject(error);
      else kept.push(waiter);
    }
    this.waiters = kept;
  }

  /** Commits what is staged now (before another write that must come after it, or at the tick). */
  commitNow(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    this.lastCommitAt = this.now();
    let failed: ReadonlyMap<string, unknown> | undefined;
    try {
      failed = this.commit();
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      return;
    }
    for (const waiter of waiters) {
      if (failed?.has(waiter.key)) waiter.reject(failed.get(waiter.key));
      else waiter.resolve();
    }
  }
}
