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
 * @example
 * const tick = new Tick(() => 100, () => store.transaction(writeStaged));
 * stage(batch); // in memory
 * await tick.committed(); // durable: answer now
 */
export class Tick {
  private waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastCommitAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** The tick's length in ms (read each time: a test may change it). */
    private readonly ms: () => number,
    /** Writes everything staged since the last commit, synchronously; a throw fails every waiter. */
    private readonly commit: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether work is staged and not yet committed. */
  get pending(): boolean {
    return this.waiters.length > 0;
  }

  /** Waits for the commit of what was just staged: at once after a quiet spell, else at the tick. */
  committed(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    const due = this.lastCommitAt + this.ms();
    if (this.timer === undefined) {
      if (this.now() >= due) this.commitNow();
      else this.timer = setTimeout(() => this.commitNow(), due - this.now());
    }
    return done;
  }

  /** Commits what is staged now (before another write that must come after it, or at the tick). */
  commitNow(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    this.lastCommitAt = this.now();
    try {
      this.commit();
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      return;
    }
    for (const waiter of waiters) waiter.resolve();
  }
}
