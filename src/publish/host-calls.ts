/**
 * A publisher channel's batches for one market host (docs/design.md#market-hosts), sent as one
 * call at most every `ms` on average: the first batch after a quiet spell goes at once (with
 * whatever comes in the same turn), later ones wait for the next call's time and go together —
 * the calls into a group grow with time, not with batches, and a publisher sending one batch
 * every `ms` or slower waits for none. Calls
 * on one stub reach the object in the order they were made, and a call's batches are taken in
 * their order, so a market's batches stay in the order sent. Each batch gets its own answer; a
 * failed call fails each of its batches (none was acknowledged).
 *
 * @example
 * const calls = new HostCalls(20, (items) => stub.ingestAll(items));
 * const answer = await calls.call({ market, batch, commit: "tick" });
 */
export class HostCalls<Item, Answer> {
  private queued: { item: Item; resolve: (answer: Answer) => void; reject: (error: unknown) => void }[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The calls' theoretical time (a cell rate's): a call may go once it is within one `ms` of it,
   * so calls average at most one per `ms` with two back to back at most, and a publisher whose
   * batches come every `ms` with a late one is not held to the late one's beat ever after.
   */
  private theoretical = Number.NEGATIVE_INFINITY;

  constructor(
    /** The calls' spacing on average (0: a call a turn). */
    private readonly ms: number,
    private readonly send: (items: Item[]) => Promise<Answer[]>,
    private readonly now: () => number = Date.now,
  ) {}

  call(item: Item): Promise<Answer> {
    const answer = new Promise<Answer>((resolve, reject) => this.queued.push({ item, resolve, reject }));
    if (this.timer === undefined) {
      const now = this.now();
      const due = Math.max(now, this.theoretical - this.ms);
      this.theoretical = Math.max(this.theoretical, due) + this.ms;
      this.timer = setTimeout(() => this.flush(), due - now);
    }
    return answer;
  }

  private flush(): void {
    this.timer = undefined;
    const queued = this.queued;
    this.queued = [];
    this.send(queued.map((q) => q.item)).then(
      (answers) => {
        for (const [i, q] of queued.entries()) q.resolve(answers[i]!);
      },
      (error) => {
        for (const q of queued) q.reject(error);
      },
    );
  }
}
