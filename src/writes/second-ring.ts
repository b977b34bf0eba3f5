/**
 * A market's second buckets (the `1s` candles, kept 25 hours: docs/history.md#layout) as a ring
 * of a row a minute: the minute's seconds as one JSON row in the slot of its minute, 1,500 slots
 * (25 hours of minutes). A minute's write goes over the row of the minute 25 hours before it —
 * one row written, where a row a minute was written and another deleted 25 hours later. Rows a
 * quiet market left behind are deleted once they are older than that, a few slots at a time.
 */
import { ringSlots } from "../core/ring-slots";
import { MINUTE_MS } from "../domain/intervals";
import type { MinuteBucket } from "../domain/rolling-window";

/** The ring's slots: 25 hours of minutes (TRADE_RETENTION_MS). */
export const SECOND_SLOTS = 1_500;
/** A minute left in its slot is deleted this long after it would have been written over. */
const PRUNE_GRACE_MS = 2 * MINUTE_MS;

/**
 * A bucket's values in the order a minute's row of seconds packs them and a bucket row binds them
 * (`bucket-store.ts`): [start, open, high, low, close, first, last, volume, quote volume, count,
 * taker buy, taker buy quote].
 */
type PackedSecond = [number, string, string, string, string, number, number, string, string, number, string, string];

export const packBucket = (b: MinuteBucket): PackedSecond => [
  b.minute,
  b.open.toString(),
  b.high.toString(),
  b.low.toString(),
  b.close.toString(),
  b.firstTradeTime,
  b.lastTradeTime,
  b.volume.toString(),
  b.quoteVolume.toString(),
  b.count,
  b.takerBuyVolume.toString(),
  b.takerBuyQuoteVolume.toString(),
];
const unpack = ([minute, open, high, low, close, first, last, volume, quote, count, buy, buyQuote]: PackedSecond): MinuteBucket => ({
  minute,
  open: BigInt(open),
  high: BigInt(high),
  low: BigInt(low),
  close: BigInt(close),
  firstTradeTime: first,
  lastTradeTime: last,
  volume: BigInt(volume),
  quoteVolume: BigInt(quote),
  count,
  takerBuyVolume: BigInt(buy),
  takerBuyQuoteVolume: BigInt(buyQuote),
});

const slotOf = (minute: number) => Math.floor(minute / MINUTE_MS) % SECOND_SLOTS;
/** The condition on `slot` for the minutes of `from`…`to`. */
const slotsOfMinutes = (from: number, to: number) => ringSlots(Math.floor(from / MINUTE_MS), Math.floor(to / MINUTE_MS), SECOND_SLOTS);

export class SecondRing {
  /** The prune's last bound: the minutes before it are gone (undefined: not pruned since the start). */
  private prunedBefore: number | undefined;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS second_ring (slot INTEGER PRIMARY KEY, minute INTEGER NOT NULL, buckets TEXT NOT NULL)");
  }

  /** Writes a minute's changed seconds over what its row holds (inside the caller's transaction); a minute past the 25 hours is not kept. */
  write(minute: number, changed: readonly MinuteBucket[], now: number): void {
    if (minute + MINUTE_MS <= now - SECOND_SLOTS * MINUTE_MS) return;
    const slot = slotOf(minute);
    const row = this.sql.exec<{ minute: number; buckets: string }>("SELECT minute, buckets FROM second_ring WHERE slot = ?", slot).toArray()[0];
    const held = row?.minute === minute ? row.buckets : undefined;
    const all = new Map<number, PackedSecond>(held ? (JSON.parse(held) as PackedSecond[]).map((b) => [b[0], b]) : []);
    for (const bucket of changed) all.set(bucket.minute, packBucket(bucket));
    const packed = [...all.values()].sort((a, b) => a[0] - b[0]);
    this.sql.exec(
      "INSERT INTO second_ring (slot, minute, buckets) VALUES (?, ?, ?) ON CONFLICT (slot) DO UPDATE SET minute = excluded.minute, buckets = excluded.buckets",
      slot,
      minute,
      JSON.stringify(packed),
    );
  }

  /** The stored seconds within `from`…`to`, by start, into `found`. Returns the rows read. */
  read(from: number, to: number, found: Map<number, MinuteBucket>): number {
    const first = Math.floor(from / MINUTE_MS) * MINUTE_MS;
    const add = (text: string) => {
      for (const packed of JSON.parse(text) as PackedSecond[]) if (packed[0] >= from && packed[0] <= to) found.set(packed[0], unpack(packed));
    };
    const rows = this.sql.exec<{ buckets: string }>(
      `SELECT buckets FROM second_ring WHERE ${slotsOfMinutes(first, to)} AND minute >= ? AND minute <= ?`,
      first,
      to,
    );
    for (const row of rows) add(row.buckets);
    return rows.rowsRead;
  }

  /**
   * Deletes the minutes older than `before` that no later minute wrote over (a quiet market's):
   * the slots of the minutes since the last prune, the whole ring after a start.
   */
  prune(before: number): void {
    const bound = before - PRUNE_GRACE_MS;
    const since = this.prunedBefore === undefined ? bound - SECOND_SLOTS * MINUTE_MS : Math.max(this.prunedBefore, bound - SECOND_SLOTS * MINUTE_MS);
    if (bound > since) {
      this.sql.exec(`DELETE FROM second_ring WHERE ${slotsOfMinutes(since - MINUTE_MS, bound)} AND minute + ? <= ?`, MINUTE_MS, bound);
    }
    this.prunedBefore = bound;
  }
}
