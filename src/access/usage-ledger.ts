/**
 * What a usage ledger holds (docs/limits.md#your-keys-usage), pure: the requests and 429s of many
 * keys per minute and per hour, one stored row a bucket for all of a ledger's keys — so counting a
 * key's use writes no row of its own (a row a key-minute was the bill's largest avoidable line).
 * The I/O around it is in `key-usage-ledger.ts`.
 */
import { USAGE_INTERVALS, type UsageBucket, type UsageInterval } from "./key-usage";

/** One key's counts in a bucket: `[requests, rateLimited, last admitted use (0: none)]`. */
export type KeyCounts = [requests: number, rateLimited: number, lastUse: number];
/** A bucket's counts of a ledger's keys, by key id: a stored row's value. */
export type BucketCounts = Record<string, KeyCounts>;

export const INTERVALS = Object.keys(USAGE_INTERVALS) as UsageInterval[];

/** The start of the bucket of `interval` that holds `at`. */
export function bucketStart(interval: UsageInterval, at: number): number {
  const { ms } = USAGE_INTERVALS[interval];
  return Math.floor(at / ms) * ms;
}

/** The oldest bucket of `interval` still kept at `now`. */
export function oldestKept(interval: UsageInterval, now: number): number {
  return bucketStart(interval, now) - USAGE_INTERVALS[interval].keepMs;
}

/** Counts not yet stored, held in memory until the next flush. */
export class PendingUsage {
  private buckets = new Map<UsageInterval, Map<number, Map<string, KeyCounts>>>();

  /** Counts one request of `keyId` at `at` (a refused one is a 429 too). */
  count(keyId: string, at: number, refused: boolean): void {
    for (const interval of INTERVALS) {
      let starts = this.buckets.get(interval);
      if (!starts) this.buckets.set(interval, (starts = new Map()));
      const start = bucketStart(interval, at);
      let keys = starts.get(start);
      if (!keys) starts.set(start, (keys = new Map()));
      const counts = keys.get(keyId) ?? [0, 0, 0];
      counts[0] += 1;
      if (refused) counts[1] += 1;
      else counts[2] = Math.max(counts[2], at);
      keys.set(keyId, counts);
    }
  }

  get empty(): boolean {
    return this.buckets.size === 0;
  }

  /** Everything held, handed over for storing (and forgotten here). */
  take(): Map<UsageInterval, Map<number, Map<string, KeyCounts>>> {
    const taken = this.buckets;
    this.buckets = new Map();
    return taken;
  }

  /** Takes back what {@link take} handed over and could not be stored: it is held again, added to what came since. */
  restore(taken: Map<UsageInterval, Map<number, Map<string, KeyCounts>>>): void {
    for (const [interval, starts] of taken) {
      let mine = this.buckets.get(interval);
      if (!mine) this.buckets.set(interval, (mine = new Map()));
      for (const [start, keys] of starts) {
        const held = mine.get(start) ?? new Map<string, KeyCounts>();
        for (const [keyId, [requests, rateLimited, lastUse]] of keys) {
          const before = held.get(keyId) ?? [0, 0, 0];
          held.set(keyId, [before[0] + requests, before[1] + rateLimited, Math.max(before[2], lastUse)]);
        }
        mine.set(start, held);
      }
    }
  }

  /** `keyId`'s held buckets of `interval` from `since` on. */
  bucketsOf(keyId: string, interval: UsageInterval, since = 0): UsageBucket[] {
    const out: UsageBucket[] = [];
    for (const [start, keys] of this.buckets.get(interval) ?? []) {
      const counts = keys.get(keyId);
      if (counts && start + USAGE_INTERVALS[interval].ms > since) out.push({ start, requests: counts[0], rateLimited: counts[1] });
    }
    return out;
  }

  /** `keyId`'s last admitted use held (0: none). */
  lastUseOf(keyId: string): number {
    let last = 0;
    for (const [, keys] of this.buckets.get("1h") ?? []) last = Math.max(last, keys.get(keyId)?.[2] ?? 0);
    return last;
  }
}

/** A bucket's stored parts, each a row of at most PART_MAX_BYTES; `part` numbers them. */
export interface BucketPart {
  part: number;
  counts: BucketCounts;
}

/**
 * How much of a bucket one row holds, as JSON: well under the 2 MB a value may be. A bucket with
 * more keys than that (about 20,000 at ~50 bytes a key) goes on in another part.
 */
export const PART_MAX_BYTES = 1_000_000;
/** A key's entry in a part, as JSON, at most: its quoted id, and three numbers. */
const entryBytes = (keyId: string) => keyId.length + 3 + 3 * 16 + 4;

/**
 * Adds held counts to a bucket's stored parts: a key already in a part is added there, a new one
 * goes to the last part with room, or to a new part. Returns the parts changed (to be written).
 */
export function addToParts(parts: BucketPart[], held: Map<string, KeyCounts>, maxBytes = PART_MAX_BYTES): BucketPart[] {
  const changed = new Set<BucketPart>();
  const sizes = new Map(parts.map((p) => [p, JSON.stringify(p.counts).length]));
  for (const [keyId, [requests, rateLimited, lastUse]] of held) {
    let home = parts.find((p) => keyId in p.counts);
    if (!home) {
      home = parts.at(-1);
      if (!home || (sizes.get(home) ?? 0) + entryBytes(keyId) > maxBytes) {
        home = { part: (home?.part ?? -1) + 1, counts: {} };
        parts.push(home);
        sizes.set(home, 2);
      }
      sizes.set(home, (sizes.get(home) ?? 0) + entryBytes(keyId));
    }
    const before = home.counts[keyId] ?? [0, 0, 0];
    home.counts[keyId] = [before[0] + requests, before[1] + rateLimited, Math.max(before[2], lastUse)];
    changed.add(home);
  }
  return [...changed];
}

/** Buckets of two sources as one list: counts of the same start summed, oldest first. */
export function sumBuckets(...lists: UsageBucket[][]): UsageBucket[] {
  const byStart = new Map<number, UsageBucket>();
  for (const bucket of lists.flat()) {
    const held = byStart.get(bucket.start);
    if (held) {
      held.requests += bucket.requests;
      held.rateLimited += bucket.rateLimited;
    } else byStart.set(bucket.start, { ...bucket });
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}
