/**
 * A map bounded in bytes and in entries, for caches a request can grow (docs/security.md#bounded-memory):
 * when an entry would take it past either bound, the least recently used entries go first. A
 * value larger than the whole byte bound is not kept at all. `bytesOf` says what an entry
 * weighs (key included); strings count two bytes a character, as an isolate holds them at worst.
 *
 * @example
 * const answers = new BoundedMap<string>(4 * 1024 * 1024, 1_024, (key, text) => 2 * (key.length + text.length));
 * answers.set(key, text);
 */
export class BoundedMap<V> {
  private readonly entries = new Map<string, { value: V; bytes: number }>();
  private total = 0;

  constructor(
    readonly maxBytes: number,
    readonly maxEntries: number,
    private readonly bytesOf: (key: string, value: V) => number,
  ) {}

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value of `key`, which becomes the most recently used. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** The value of `key` without touching its place. */
  peek(key: string): V | undefined {
    return this.entries.get(key)?.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    const bytes = this.bytesOf(key, value);
    if (bytes > this.maxBytes) return;
    while (this.entries.size > 0 && (this.total + bytes > this.maxBytes || this.entries.size >= this.maxEntries)) {
      this.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, bytes });
    this.total += bytes;
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}

/** What a string weighs in an isolate at worst (two bytes a character). */
export function textBytes(...texts: string[]): number {
  let n = 0;
  for (const text of texts) n += 2 * text.length;
  return n;
}
