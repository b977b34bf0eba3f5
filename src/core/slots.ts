/**
 * Things in progress per key, at most a bound of them at once: an edge copy's refreshes in
 * flight, a publisher connection's unanswered batches. Pure bookkeeping.
 *
 * @example
 * const slots = new Slots<string>();
 * if (slots.take("BTCUSDT:ticker", 1)) try { await refresh(); } finally { slots.release("BTCUSDT:ticker"); }
 */
export class Slots<K> {
  private readonly counts = new Map<K, number>();

  /** Takes one of at most `bound` slots of `key`; false when all are taken. */
  take(key: K, bound: number): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n >= bound) return false;
    this.counts.set(key, n + 1);
    return true;
  }

  release(key: K): void {
    const n = (this.counts.get(key) ?? 1) - 1;
    if (n <= 0) this.counts.delete(key);
    else this.counts.set(key, n);
  }

  count(key: K): number {
    return this.counts.get(key) ?? 0;
  }

  /** Forgets `key` (a closed connection): its slots are gone with it. */
  clear(key: K): void {
    this.counts.delete(key);
  }
}
