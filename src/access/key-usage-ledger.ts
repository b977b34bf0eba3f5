import { IDLE_EVICTION_MS } from "../core/alarms";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { USAGE_INTERVALS, type UsageBucket, type UsageInterval } from "./key-usage";
import { addToParts, type BucketCounts, type HeldCounts, INTERVALS, type KeyCounts, oldestKept, PendingUsage, sumBuckets } from "./usage-ledger";

/** Keys one `lastUses` call answers (an account holds 20 active keys; its revoked ones are listed too). */
const MAX_KEYS_ASKED = 1_000;
/** Counts are stored this long after the first one not yet stored: well before an idle eviction. */
const USAGE_FLUSH_AFTER_MS = IDLE_EVICTION_MS / 2;

/**
 * Keys' usage (docs/limits.md#your-keys-usage), counted for a shard of the keys: an account key's
 * gate hands over what it counted every few seconds (one call for all its keys of this ledger), a
 * publishing key's guard tells of each signed request (one call, not awaited by the request). What a ledger
 * holds is stored within {@link USAGE_FLUSH_AFTER_MS} as one row a bucket (a minute's, an hour's)
 * for all its keys — a busy ledger writes about three rows every five seconds, whatever the number
 * of keys — where a key's own guard wrote a row and set an alarm a key-minute, and lost what it
 * held when it left memory before its alarm. A bucket past PART_MAX_BYTES goes on in another row.
 */
export class KeyUsageLedger extends MeteredObject {
  private readonly pending = new PendingUsage();
  private flushSet = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "usage-ledger");
    // (interval, start, part) is the row's key itself: no index row beside it.
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS usage_buckets (interval TEXT NOT NULL, start INTEGER NOT NULL, part INTEGER NOT NULL, counts TEXT NOT NULL, PRIMARY KEY (interval, start, part)) WITHOUT ROWID",
    );
  }

  /** Counts one signed request of `keyId` at `at` (the guard's clock); a refused one is a 429 too. */
  count(keyId: string, at: number, refused: boolean): void {
    this.pending.count(keyId, at, refused);
    this.armFlush();
  }

  /** Counts a gate held for keys of this ledger (docs/limits.md#key-gates): added to what is held here. */
  add(held: HeldCounts): void {
    this.pending.restore(held);
    this.armFlush();
  }

  private armFlush(): void {
    if (!this.flushSet) {
      this.flushSet = true;
      void this.ctx.storage.setAlarm(Date.now() + USAGE_FLUSH_AFTER_MS);
    }
  }

  /** `keyId`'s buckets of `interval` from `since` on, oldest first: what is stored and what is held. */
  usage(keyId: string, interval: UsageInterval, since = 0): UsageBucket[] {
    const rows = this.ctx.storage.sql.exec<{ start: number; counts: string | null }>(
      "SELECT start, json_extract(counts, ?) AS counts FROM usage_buckets WHERE interval = ? AND start > ? ORDER BY start",
      pathOf(keyId),
      interval,
      // A bucket counts from `since` if it ends after it; none older than what is kept.
      Math.max(since - USAGE_INTERVALS[interval].ms, oldestKept(interval, Date.now()) - 1),
    );
    const stored: UsageBucket[] = [];
    for (const { start, counts } of rows) {
      if (counts === null) continue;
      const [requests, rateLimited] = JSON.parse(counts) as KeyCounts;
      stored.push({ start, requests, rateLimited });
    }
    return sumBuckets(stored, this.pending.bucketsOf(keyId, interval, since));
  }

  /** {@link lastUse} of each of `keyIds` (a listing's keys of this ledger: one call, not one per key). */
  lastUses(keyIds: string[]): (number | null)[] {
    return keyIds.slice(0, MAX_KEYS_ASKED).map((keyId) => this.lastUse(keyId));
  }

  /** When `keyId` was last admitted within the hours kept (30 days), or null. */
  lastUse(keyId: string): number | null {
    const row = this.ctx.storage.sql
      .exec<{ last: number | null }>("SELECT max(json_extract(counts, ?)) AS last FROM usage_buckets WHERE interval = '1h'", `${pathOf(keyId)}[2]`)
      .toArray()[0];
    const last = Math.max(row?.last ?? 0, this.pending.lastUseOf(keyId));
    return last > 0 ? last : null;
  }

  /** Stores what is held, a row per bucket part touched, and drops what is past keeping. */
  override async alarm(): Promise<void> {
    this.flushSet = false;
    if (this.pending.empty) return;
    const now = Date.now();
    const buckets = this.pending.take();
    try {
      // All or nothing: a flush that fails leaves no part written twice when it is tried again.
      this.ctx.storage.transactionSync(() => this.store(buckets, now));
    } catch (error) {
      // Held again for the alarm's retry (and any flush after): a failed write loses no count.
      this.pending.restore(buckets);
      throw error;
    }
  }

  private store(buckets: HeldCounts, now: number): void {
    const sql = this.ctx.storage.sql;
    for (const interval of INTERVALS) {
      for (const [start, held] of buckets.get(interval) ?? []) {
        const parts = sql
          .exec<{ part: number; counts: string }>("SELECT part, counts FROM usage_buckets WHERE interval = ? AND start = ? ORDER BY part", interval, start)
          .toArray()
          .map(({ part, counts }) => ({ part, counts: JSON.parse(counts) as BucketCounts }));
        for (const { part, counts } of addToParts(parts, held)) {
          sql.exec("INSERT OR REPLACE INTO usage_buckets (interval, start, part, counts) VALUES (?, ?, ?, ?)", interval, start, part, JSON.stringify(counts));
        }
      }
      sql.exec("DELETE FROM usage_buckets WHERE interval = ? AND start < ?", interval, oldestKept(interval, now));
    }
  }
}

/** The JSON path of a key's counts in a bucket's row (key ids are `mk_`/`pk_` and hex: nothing to escape). */
function pathOf(keyId: string): string {
  return `$."${keyId}"`;
}

meterRequests(KeyUsageLedger, ["count", "add", "usage", "lastUse", "lastUses", "alarm"]);
