/**
 * A publisher channel's batches for one market host (docs/design.md#market-hosts), gathered for
 * up to `ms` and sent as one call: the calls into a group grow with time, not with batches. Calls
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

  constructor(
    /** How long the first batch waits for others (0: those of the same turn). */
    private readonly ms: number,
    private readonly send: (items: Item[]) => Promise<Answer[]>,
  ) {}

  call(item: Item): Promise<Answer> {
    const answer = new Promise<Answer>((resolve, reject) => this.queued.push({ item, resolve, reject }));
    this.timer ??= setTimeout(() => this.flush(), this.ms);
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
