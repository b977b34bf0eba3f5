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

/** Counts held, by interval, bucket start and key id. */
export type HeldCounts = Map<UsageInterval, Map<number, Map<string, KeyCounts>>>;

/** A key's counts with more added: requests and 429s summed, the later last use kept. */
function plus(before: KeyCounts | undefined, more: KeyCounts): KeyCounts {
  return before ? [before[0] + more[0], before[1] + more[1], Math.max(before[2], more[2])] : [...more];
}

/** Counts not yet stored, held in memory until the next flush. */
export class PendingUsage {
  private buckets: HeldCounts = new Map();

  /** Counts one request of `keyId` at `at` (a refused one is a 429 too). */
  count(keyId: string, at: number, refused: boolean): void {
    const counts: KeyCounts = refused ? [1, 1, 0] : [1, 0, at];
    for (const interval of INTERVALS) this.add(interval, bucketStart(interval, at), keyId, counts);
  }

  private add(interval: UsageInterval, start: number, keyId: string, counts: KeyCounts): void {
    let starts = this.buckets.get(interval);
    if (!starts) this.buckets.set(interval, (starts = new Map()));
    let keys = starts.get(start);
    if (!keys) starts.set(start, (keys = new Map()));
    keys.set(keyId, plus(keys.get(keyId), counts));
  }

  get empty(): boolean {
    return this.buckets.size === 0;
  }

  /** Everything held, handed over for storing (and forgotten here). */
  take(): HeldCounts {
    const taken = this.buckets;
    this.buckets = new Map();
    return taken;
  }

  /** Takes back what {@link take} handed over and could not be stored: it is held again, added to what came since. */
  restore(taken: HeldCounts): void {
    for (const [interval, starts] of taken) for (const [start, keys] of starts) for (const [keyId, counts] of keys) this.add(interval, start, keyId, counts);
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

/** `held` split by `groupOf` each key id (a gate's counts by the ledger of each key), each part in the same shape. */
export function splitHeld(held: HeldCounts, groupOf: (keyId: string) => number): Map<number, HeldCounts> {
  const parts = new Map<number, HeldCounts>();
  for (const [interval, starts] of held)
    for (const [start, keys] of starts)
      for (const [keyId, counts] of keys) {
        const group = groupOf(keyId);
        let part = parts.get(group);
        if (!part) parts.set(group, (part = new Map()));
        let partStarts = part.get(interval);
        if (!partStarts) part.set(interval, (partStarts = new Map()));
        let partKeys = partStarts.get(start);
        if (!partKeys) partStarts.set(start, (partKeys = new Map()));
        partKeys.set(keyId, counts);
      }
  return parts;
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
const PART_MAX_BYTES = 1_000_000;
/** A key's entry in a part, as JSON, at most: its quoted id, and three numbers. */
const entryBytes = (keyId: string) => keyId.length + 3 + 3 * 16 + 4;

/**
 * Adds held counts to a bucket's stored parts: a key already in a part is added there, a new one
 * goes to the last part with room, or to a new part. Returns the parts changed (to be written).
 */
export function addToParts(parts: BucketPart[], held: Map<string, KeyCounts>, maxBytes = PART_MAX_BYTES): BucketPart[] {
  const changed = new Set<BucketPart>();
  const sizes = new Map(parts.map((p) => [p, JSON.stringify(p.counts).length]));
  for (const [keyId, counts] of held) {
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
    home.counts[keyId] = plus(home.counts[keyId], counts);
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
