/**
 * What the caches that live as long as an isolate may hold together (docs/security.md#bounded-memory):
 * each is bounded by itself, and their bounds add up to more than an isolate's 128 MB leaves them,
 * so past this sum the least recently used entry of any of them goes first.
 */
export class CacheBudget {
  readonly maps = new Set<BoundedMap<unknown>>();
  /** Rises with every use, so entries of different maps compare by when they were last used. */
  clock = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held by the maps together. */
  get bytes(): number {
    let sum = 0;
    for (const map of this.maps) sum += map.bytes;
    return sum;
  }

  /** Makes room for `bytes` more by taking out the least recently used entries of all the maps. */
  makeRoom(bytes: number): void {
    while (this.bytes + bytes > this.maxBytes) {
      let oldest: BoundedMap<unknown> | undefined;
      for (const map of this.maps) if (map.oldestUse < (oldest?.oldestUse ?? Number.POSITIVE_INFINITY)) oldest = map;
      if (!oldest) return;
      oldest.dropOldest();
    }
  }
}

/** The caches of this isolate that live as long as it does: 64 MiB of its 128 MB together (each within its own bound too). */
export const isolateCaches = new CacheBudget(64 * 1024 * 1024);

/**
 * A map bounded in bytes and in entries, for caches a request can grow (docs/security.md#bounded-memory):
 * when an entry would take it past either bound, the least recently used entries go first. A
 * value larger than the whole byte bound is not kept at all. `bytesOf` says what an entry
 * weighs (key included); strings count two bytes a character, as an isolate holds them at worst.
 * A cache that lives as long as its isolate also counts against the isolate's `budget`, which
 * holds it for good: a map that is made and dropped (a host's, a test's) is given none.
 *
 * @example
 * const answers = new BoundedMap<string>(4 * 1024 * 1024, 1_024, (key, text) => 2 * (key.length + text.length), isolateCaches);
 * answers.set(key, text);
 */
export class BoundedMap<V> {
  private readonly entries = new Map<string, { value: V; bytes: number; used: number }>();
  private total = 0;

  constructor(
    readonly maxBytes: number,
    readonly maxEntries: number,
    private readonly bytesOf: (key: string, value: V) => number,
    private readonly budget?: CacheBudget,
  ) {
    budget?.maps.add(this as BoundedMap<unknown>);
  }

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
    entry.used = this.use();
    return entry.value;
  }

  /** The value of `key` without touching its place. */
  peek(key: string): V | undefined {
    return this.entries.get(key)?.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    const bytes = this.bytesOf(key, value);
    if (bytes > this.maxBytes || (this.budget !== undefined && bytes > this.budget.maxBytes)) return;
    while (this.entries.size > 0 && (this.total + bytes > this.maxBytes || this.entries.size >= this.maxEntries)) this.dropOldest();
    this.budget?.makeRoom(bytes);
    this.entries.set(key, { value, bytes, used: this.use() });
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

  /** When the least recently used entry was last used, on the budget's clock (infinity when empty). */
  get oldestUse(): number {
    return this.entries.values().next().value?.used ?? Number.POSITIVE_INFINITY;
  }

  /** Takes out the least recently used entry. */
  dropOldest(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.delete(oldest.value);
  }

  private use(): number {
    return this.budget ? ++this.budget.clock : 0;
  }
}

/** What a string weighs in an isolate at worst (two bytes a character). */
export function textBytes(...texts: string[]): number {
  let n = 0;
  for (const text of texts) n += 2 * text.length;
  return n;
}
