import type { KeyRecord } from "./keys";

/** A key's record as a gate holds it, with what it derived from it. */
export interface KeyEntry {
  record: KeyRecord;
  /** When the record was read from the key's guard (the gate's clock). */
  fetchedAt: number;
  /** The key's last use as its guard stored it (at most once a day), or null. */
  lastUseStored: number | null;
  /** The secret, unsealed and imported once (the expensive part of a check). */
  cryptoKey?: Promise<CryptoKey>;
}

/** What a gate asks a key's guard: its record and stored last use, or null for no such key. */
export type FetchRecord = (keyId: string) => Promise<{ record: KeyRecord; lastUseStored: number | null } | null>;

/**
 * The account keys' records a gate checks signed requests against (docs/limits.md#key-gates): read
 * from each key's guard — the one place a key is stored — on its first request, then held. The
 * guard tells the gate when the key changes ({@link forget}) before it answers the change, so a
 * revoked key fails on its next request; a record older than `maxAgeMs` is read again, which bounds
 * what a lost word could leave standing. A key the guard does not know is not held (a new key works
 * at once). At most `maxKeys` are held, the least recently used dropped first.
 *
 * @example
 * const book = new KeyBook(20_000, 600_000, (keyId) => accessGuard(env, `key:${keyId}`).recordForGate());
 * const entry = await book.entryOf("mk_0123456789abcdef01234567", Date.now());
 */
export class KeyBook {
  /** By key id: the entry, or its read under way; the least recently used first. */
  private readonly entries = new Map<string, KeyEntry | Promise<KeyEntry | null>>();
  /** Forgets so far: a request whose read straddled one reads again. */
  private forgets = 0;

  constructor(
    readonly maxKeys: number,
    readonly maxAgeMs: number,
    private readonly fetch: FetchRecord,
  ) {}

  /** Entries held now (the bound's tests). */
  get size(): number {
    return this.entries.size;
  }

  /** `keyId`'s entry, read from its guard when not held or too old; null when the guard knows no such key. */
  async entryOf(keyId: string, now: number): Promise<KeyEntry | null> {
    const forgets = this.forgets;
    const entry = await this.current(keyId, now);
    // A key forgotten while this waited (a revocation answered meanwhile): its record is read again.
    return this.forgets === forgets ? entry : this.current(keyId, now);
  }

  private current(keyId: string, now: number): KeyEntry | Promise<KeyEntry | null> {
    const held = this.entries.get(keyId);
    if (held instanceof Promise) return held;
    if (held && now - held.fetchedAt < this.maxAgeMs) {
      // Used now: moved to the end, the last to be dropped.
      this.entries.delete(keyId);
      this.entries.set(keyId, held);
      return held;
    }
    return this.read(keyId, now);
  }

  private read(keyId: string, now: number): Promise<KeyEntry | null> {
    const read = this.fetch(keyId).then((found) => (found ? { record: found.record, lastUseStored: found.lastUseStored, fetchedAt: now } : null));
    this.entries.delete(keyId);
    this.entries.set(keyId, read);
    while (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value as string);
    // Held once read, unless forgotten meanwhile; nothing held for a key the guard does not know (a
    // new key works at once), nor when the read failed: the next request asks again.
    read.then(
      (entry) => {
        if (this.entries.get(keyId) !== read) return;
        if (entry) this.entries.set(keyId, entry);
        else this.entries.delete(keyId);
      },
      () => {
        if (this.entries.get(keyId) === read) this.entries.delete(keyId);
      },
    );
    return read;
  }

  /** The key changed (revoked): what is held of it is dropped, a read under way included. */
  forget(keyId: string): void {
    this.entries.delete(keyId);
    this.forgets += 1;
  }
}
