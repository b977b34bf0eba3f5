/**
 * A market's minute writes (docs/design.md#the-write-path): its staged candle buckets and its
 * trade ids, written a moment after the minute's end by its first commit (`bucketsDue`), by its
 * alarm when it stopped trading, or at once when what waits reaches its bound — each minute once
 * it has ended (the one being traded is held back, `heldFromAt`), each hour and day once it has
 * closed. Returns the fields of the market's record that say what the stored buckets hold, for the
 * caller to write with them.
 */

import { bucketsDue, heldFromAt } from "./bucket-store";
import type { MarketRecord, MarketStore } from "./market-store";
import type { Tick } from "./tick";
import { PENDING_MAX_BYTES } from "./trade-id-minutes";

/**
 * The staged buckets are written sooner than the minute's end once this many wait (about 1 MB):
 * late trades spread over a week stage a bucket each of their own, and a publisher could otherwise
 * grow the staged map without bound within a minute.
 */
export const MAX_STAGED_BUCKETS = 4_096;

export class MinuteWrites {
  /** When the staged buckets were last written (0 after a start: the first commit writes them). */
  flushedAt = 0;

  constructor(
    private readonly store: MarketStore,
    /** The group's tick: what it staged is committed before a write of its own. */
    private readonly tick: Tick,
  ) {}

  /** Inside a commit: written once the minute's wait is over (`bucketsDue`), or all of it when a bound is reached. */
  atCommit(tradeSeq: number, now: number): Partial<MarketRecord> {
    const full = this.store.candles.stagedCount >= MAX_STAGED_BUCKETS || this.store.pendingIds().bytes >= PENDING_MAX_BYTES;
    return full || bucketsDue(now, this.flushedAt) ? this.write(tradeSeq, now, full) : {};
  }

  /** The market's alarm: written when due and no commit wrote it (a market that stopped trading). */
  atAlarm(tradeSeq: number, now: number): void {
    if (bucketsDue(now, this.flushedAt)) this.writeNow(tradeSeq);
  }

  /**
   * Written now, in a transaction of its own with the record (none when nothing was due): the
   * alarm's, or `all` of them (the minute being traded too) before an archive or an import.
   */
  writeNow(tradeSeq: number, all = false): void {
    // What a tick staged is written first: the buckets' mark never runs ahead of the stored trades.
    this.tick.commitNow();
    const now = Date.now();
    this.store.transaction(() => {
      const fields = this.write(tradeSeq, now, all);
      if (Object.keys(fields).length > 0) this.store.writeRecord(fields);
    });
  }

  /**
   * Writes the staged candle buckets (a row each, the seconds a row a minute; an hour or a day once,
   * at its close) and the waiting trade ids (a row a minute of trade time), holding back the minute
   * being traded unless `all`; returns the record's fields saying which trades they hold, when the
   * rollups were written through, and which minute waits. Inside the caller's transaction. The
   * open block of trades is not written here: its trades are in the log's records until a
   * snapshot covers them, and it is written then (a block a snapshot, not a block a minute).
   */
  private write(throughSeq: number, now: number, all: boolean): Partial<MarketRecord> {
    this.flushedAt = now;
    const heldFrom = heldFromAt(now, all);
    if (!this.writable(now, heldFrom)) return {};
    this.store.candles.flush(now, heldFrom);
    this.store.writeIds(now, heldFrom);
    return { bucketsThroughSeq: throughSeq, rollupsThrough: now, heldFrom: all ? undefined : heldFrom };
  }

  /** Whether a write at `now`, holding back the minutes from `heldFrom`, has a row to write. */
  private writable(now: number, heldFrom: number): boolean {
    return this.store.candles.writable(now, heldFrom) || this.store.idsWritable(heldFrom);
  }
}
