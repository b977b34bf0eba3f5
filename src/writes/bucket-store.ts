/**
 * A market's candle buckets in SQLite (docs/history.md#layout): minutes in `minute_buckets`,
 * seconds, hours and UTC days in `rollup_buckets`; every candle of every interval is built from
 * them. Part of the market store (which creates the tables), apart because it is a job of its own.
 *
 * What live trades change is staged in memory and written together at a flush (about once a
 * minute: docs/design.md#the-write-path), not a row per bucket per batch; reads see the staged
 * buckets over the stored ones. The trades are stored as they come, so the staged buckets are
 * never the only copy: a market that restarts stages again the trades after the last flush.
 *
 * An hour or a day is written once, at the first flush after it ends (`stillOpen`): until then
 * it stays staged, and a market that restarts builds it again from its stored minutes
 * (`restoreOpenRollups`) — where each flush wrote both again, two rows a trading market-minute.
 * Likewise the minute being traded when the flush runs stays staged (its seconds, its minute):
 * its trades are staged again after a restart from the record's `heldFrom`.
 */
import { BUCKET_SIZES, type BucketSize, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from "../domain/intervals";
import { addToBucket, type MinuteBucket, mergeBuckets, type UnitTrade } from "../domain/rolling-window";
import { packBucket, SecondRing } from "./second-ring";

type Row = Record<string, SqlStorageValue>;

function toBucket(row: Row): MinuteBucket {
  return {
    minute: (row.minute ?? row.start) as number,
    open: BigInt(row.open as string),
    high: BigInt(row.high as string),
    low: BigInt(row.low as string),
    close: BigInt(row.close as string),
    firstTradeTime: row.first_trade_time as number,
    lastTradeTime: row.last_trade_time as number,
    volume: BigInt(row.volume as string),
    quoteVolume: BigInt(row.quote_volume as string),
    takerBuyVolume: BigInt(row.taker_buy_volume as string),
    takerBuyQuoteVolume: BigInt(row.taker_buy_quote_volume as string),
    count: row.trade_count as number,
  };
}

const keyOf = (size: BucketSize, start: number) => `${size}:${start}`;

/**
 * A bucket a flush at `now` leaves staged: an hour or a day that has not ended (written once, at
 * its close), and a second or minute of the minutes from `heldFrom` on (the minute still being
 * traded, written once it has ended, not a part of it now and the whole of it again later).
 */
const stillOpen = (size: BucketSize, start: number, now: number, heldFrom: number) =>
  size === HOUR_MS || size === DAY_MS ? start + size > now : Math.floor(start / MINUTE_MS) * MINUTE_MS >= heldFrom;

/** Spans of stored hours or days of at most this many read whole and kept; at most this many kept in all (about 400 KB). */
const ROLLUP_CACHE_SPAN = 64;
const ROLLUP_CACHE_BUCKETS = 2_048;

/**
 * A minute is written this long after it ends, not at the turn: a batch sent just before the turn
 * lands just after it, and its trades, stamped in the closed minute, would stage that minute again
 * for a second write a minute later (1.05 to 1.28 writes a trading market-minute measured, each
 * write its minute, its seconds and its ids).
 */
export const MINUTE_WRITE_AFTER_MS = 2_000;

/**
 * Whether the staged buckets are due to be written (docs/design.md#the-write-path), at a commit or
 * at the market's alarm: once the minute has turned since the last write and MINUTE_WRITE_AFTER_MS
 * have passed since the turn, so a write holds the closed minute whole, stragglers in, and not two
 * minutes' halves each written twice. The alarm at the turn comes too soon for a market that trades
 * on: its first commit after the wait writes. A market that stopped trading is written by the alarm
 * a minute on (its minute alarms go on while it has trades in the last 24 hours): two turns since
 * the last write are due whatever the phase, as is the first write after a start (`flushedAt` 0).
 */
export function bucketsDue(now: number, flushedAt: number): boolean {
  const turns = Math.floor(now / MINUTE_MS) - Math.floor(flushedAt / MINUTE_MS);
  return turns >= 2 || (turns === 1 && now % MINUTE_MS >= MINUTE_WRITE_AFTER_MS);
}

/** The minute a flush at `now` holds back: the one being traded; none when `all` must be written (an archive, an import, a bound reached). */
export function heldFromAt(now: number, all: boolean): number {
  return all ? Number.POSITIVE_INFINITY : Math.floor(now / MINUTE_MS) * MINUTE_MS;
}

export class BucketStore {
  /** Buckets live trades changed since the last flush, by size and start. */
  private readonly staged = new Map<string, { size: BucketSize; bucket: MinuteBucket }>();
  /** Stored hours and days read for a span, until a rollup is written (`storedBuckets`), and how many buckets they hold. */
  private readonly rollupReads = new Map<string, MinuteBucket[]>();
  private rollupsHeld = 0;

  /** The second buckets: a minute's as one row, in a ring of 25 hours (`second-ring.ts`). */
  private readonly seconds: SecondRing;

  constructor(private readonly sql: SqlStorage) {
    this.seconds = new SecondRing(sql);
  }

  private forgetRollupReads(): void {
    this.rollupReads.clear();
    this.rollupsHeld = 0;
  }

  /** A bucket live trades changed: written at the next flush, read from here until then. */
  stage(bucket: MinuteBucket, size: BucketSize = MINUTE_MS): void {
    this.staged.set(keyOf(size, bucket.minute), { size, bucket });
  }

  /** Adds a live trade to its second, minute, hour and day buckets (staged); returns its minute's and its day's. */
  stageTrade(trade: UnitTrade): { minute: MinuteBucket; day: MinuteBucket } {
    const changed = new Map<BucketSize, MinuteBucket>();
    for (const size of BUCKET_SIZES) {
      const start = Math.floor(trade.time / size) * size;
      const bucket = addToBucket(this.bucketAt(size, start), trade, start);
      this.stage(bucket, size);
      changed.set(size, bucket);
    }
    return { minute: changed.get(MINUTE_MS)!, day: changed.get(DAY_MS)! };
  }

  /** How many buckets are held in memory: those waiting for the flush and the open hours and days. */
  get stagedCount(): number {
    return this.staged.size;
  }

  /** Whether a flush at `now` holding back the minutes from `heldFrom` has a row to write. */
  writable(now: number, heldFrom = Number.POSITIVE_INFINITY): boolean {
    for (const { size, bucket } of this.staged.values()) if (!stillOpen(size, bucket.minute, now, heldFrom)) return true;
    return false;
  }

  /**
   * Writes the staged buckets and forgets them: a row each, but the seconds a row a minute; an
   * hour or a day only once it has ended by `now`, and no second or minute of the minutes from
   * `heldFrom` on (those stay staged). The caller records up to which trade they hold, `now` as
   * the time the rollups are written through, and `heldFrom`.
   */
  flush(now: number, heldFrom = Number.POSITIVE_INFINITY): void {
    const seconds = new Map<number, MinuteBucket[]>();
    for (const [key, { size, bucket }] of this.staged) {
      if (stillOpen(size, bucket.minute, now, heldFrom)) continue;
      this.staged.delete(key);
      if (size !== SECOND_MS) this.upsertBucket(bucket, size);
      else {
        const minute = Math.floor(bucket.minute / MINUTE_MS) * MINUTE_MS;
        seconds.set(minute, [...(seconds.get(minute) ?? []), bucket]);
      }
    }
    for (const [minute, changed] of seconds) this.seconds.write(minute, changed, now);
  }

  /**
   * After a start: the hours and days not written whole by `writtenThrough` (the last flush's time;
   * undefined for a market whose every flush wrote them) are built again from the stored minutes
   * and staged, before the trades after the flush are staged again over them. Reads at most a
   * day's hours and an hour's minutes a period.
   */
  restoreOpenRollups(writtenThrough: number | undefined): void {
    if (writtenThrough === undefined) return;
    // Trades are at most seconds from the future (ingest.ts): the periods from the last flush's day on are a day or two.
    const from = Math.floor(writtenThrough / DAY_MS) * DAY_MS;
    const latest = this.sql.exec<{ minute: number | null }>("SELECT max(minute) AS minute FROM minute_buckets WHERE minute >= ?", from).one().minute;
    if (latest === null) return;
    for (const size of [HOUR_MS, DAY_MS] as const) {
      for (let start = Math.floor(writtenThrough / size) * size; start <= latest; start += size) {
        // The day from its hours: those before are stored whole, the rest were just rebuilt (staged).
        const parts = size === HOUR_MS ? this.storedBuckets(MINUTE_MS, start, start + size - 1, "ASC") : this.buckets(HOUR_MS, start, start + size - 1, "ASC");
        const merged = mergeBuckets([...parts]);
        if (merged) this.stage({ ...merged, minute: start }, size);
      }
    }
  }

  /** Drops the second buckets older than `before` (their minutes' rows). */
  pruneSeconds(before: number): void {
    this.seconds.prune(before);
  }

  /**
   * Writes one bucket of `size` (docs/history.md#layout): minutes in their own table, the rest as
   * rollups. A minute written from live trades is live from then on; `imported` marks an import's.
   */
  upsertBucket(bucket: MinuteBucket, size: BucketSize = MINUTE_MS, imported = false): void {
    if (size !== MINUTE_MS) this.forgetRollupReads();
    const [table, key, keyValues] =
      size === MINUTE_MS ? ["minute_buckets", "minute", `${imported ? 1 : 0}, ?`] : ["rollup_buckets", "size, start", `${size}, ?`];
    const extra = size === MINUTE_MS ? ["imported, ", ", imported = excluded.imported"] : ["", ""];
    this.sql.exec(
      `INSERT INTO ${table} (${extra[0]}${key}, open, high, low, close, first_trade_time, last_trade_time, volume, quote_volume, trade_count,
         taker_buy_volume, taker_buy_quote_volume)
       VALUES (${keyValues}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (${key}) DO UPDATE SET open = excluded.open, high = excluded.high, low = excluded.low,
         close = excluded.close, first_trade_time = excluded.first_trade_time, last_trade_time = excluded.last_trade_time,
         volume = excluded.volume, quote_volume = excluded.quote_volume, trade_count = excluded.trade_count,
         taker_buy_volume = excluded.taker_buy_volume, taker_buy_quote_volume = excluded.taker_buy_quote_volume${extra[1]}`,
      ...packBucket(bucket),
    );
  }

  /** The minutes stored within `from`…`to`, and whether each was imported (else it holds live trades). */
  storedMinutes(from: number, to: number): { minute: number; imported: number }[] {
    const stored = this.sql
      .exec<{ minute: number; imported: number }>("SELECT minute, imported FROM minute_buckets WHERE minute >= ? AND minute <= ?", from, to)
      .toArray();
    // A staged minute holds live trades.
    const known = new Set(stored.map((m) => m.minute));
    for (const { size, bucket } of this.staged.values()) {
      if (size === MINUTE_MS && bucket.minute >= from && bucket.minute <= to && !known.has(bucket.minute)) stored.push({ minute: bucket.minute, imported: 0 });
    }
    return stored;
  }

  /** The bucket of `size` starting at `start`, if it holds trades. */
  bucketAt(size: BucketSize, start: number): MinuteBucket | undefined {
    return this.staged.get(keyOf(size, start))?.bucket ?? this.storedBuckets(size, start, start, "ASC").next().value ?? undefined;
  }

  /** Bucket rows read by `buckets()` over this store's life (tests read it; the cost counters come from the same cursors). */
  bucketRowsRead = 0;

  /** Buckets of `size` starting within `from`…`to`, lazily, ascending or descending: the staged ones over the stored. */
  *buckets(size: BucketSize, from: number, to: number, order: "ASC" | "DESC"): Generator<MinuteBucket> {
    const staged = [...this.staged.values()]
      .filter((s) => s.size === size && s.bucket.minute >= from && s.bucket.minute <= to)
      .map((s) => s.bucket)
      .sort((a, b) => (order === "ASC" ? a.minute - b.minute : b.minute - a.minute));
    if (staged.length === 0) {
      yield* this.storedBuckets(size, from, to, order);
      return;
    }
    const before = (a: number, b: number) => (order === "ASC" ? a < b : a > b);
    let next = 0;
    for (const bucket of this.storedBuckets(size, from, to, order)) {
      while (next < staged.length && before(staged[next]!.minute, bucket.minute)) yield staged[next++]!;
      if (next < staged.length && staged[next]!.minute === bucket.minute) yield staged[next++]!;
      else yield bucket;
    }
    while (next < staged.length) yield staged[next++]!;
  }

  private *storedBuckets(size: BucketSize, from: number, to: number, order: "ASC" | "DESC"): Generator<MinuteBucket> {
    if (size === SECOND_MS) {
      yield* this.storedSeconds(from, to, order);
      return;
    }
    // Up to 64 hours or days read whole and kept until a rollup is written: an open
    // candle's stored part, asked again each second by its kline streams, is read once.
    const cached = size !== MINUTE_MS && to - from < ROLLUP_CACHE_SPAN * size;
    const key = `${size}:${from}:${to}:${order}`;
    const hit = cached ? this.rollupReads.get(key) : undefined;
    if (hit) {
      yield* hit;
      return;
    }
    const cursor =
      size === MINUTE_MS
        ? this.sql.exec(`SELECT * FROM minute_buckets WHERE minute >= ? AND minute <= ? ORDER BY minute ${order}`, from, to)
        : this.sql.exec(`SELECT * FROM rollup_buckets WHERE size = ? AND start >= ? AND start <= ? ORDER BY start ${order}`, size, from, to);
    if (cached) {
      // Frozen: a reader that changed one would change every later read of it.
      const read = cursor.toArray().map((row) => Object.freeze(toBucket(row)));
      this.bucketRowsRead += cursor.rowsRead;
      if (this.rollupsHeld + read.length > ROLLUP_CACHE_BUCKETS) this.forgetRollupReads();
      this.rollupReads.set(key, read);
      this.rollupsHeld += read.length;
      yield* read;
      return;
    }
    try {
      for (const row of cursor) yield toBucket(row);
    } finally {
      this.bucketRowsRead += cursor.rowsRead;
    }
  }

  /** The stored second buckets within `from`…`to`: the minutes' rows. */
  private *storedSeconds(from: number, to: number, order: "ASC" | "DESC"): Generator<MinuteBucket> {
    const found = new Map<number, MinuteBucket>();
    this.bucketRowsRead += this.seconds.read(from, to, found);
    const sorted = [...found.values()].sort((a, b) => (order === "ASC" ? a.minute - b.minute : b.minute - a.minute));
    yield* sorted;
  }

  /**
   * Buckets that tile `from`…`to` (`from` aligned to the finest size), ascending: the finest at the
   * ragged edges and ever coarser ones between them (`sizes` ascending), so a 7-day window reads
   * about 300 rows of minutes and hours, not 10,080, and a month at +05:30 about 150 of minutes,
   * hours and days, not 44,640.
   */
  *tileBuckets(from: number, to: number, sizes: readonly BucketSize[]): Generator<MinuteBucket> {
    const [fine, coarse] = sizes as [BucketSize, BucketSize | undefined];
    const firstCoarse = coarse === undefined ? 0 : Math.ceil(from / coarse) * coarse;
    const endOfCoarse = coarse === undefined ? 0 : Math.floor((to + 1) / coarse) * coarse; // coarse buckets that end within the span
    if (firstCoarse >= endOfCoarse) {
      yield* this.buckets(fine, from, to, "ASC");
      return;
    }
    yield* this.buckets(fine, from, firstCoarse - 1, "ASC");
    yield* this.tileBuckets(firstCoarse, endOfCoarse - 1, sizes.slice(1));
    yield* this.buckets(fine, endOfCoarse, to, "ASC");
  }

  /** `tileBuckets` with two sizes: `fine` at the edges, `coarse` between. */
  spanBuckets(from: number, to: number, fine: BucketSize = MINUTE_MS, coarse: BucketSize = HOUR_MS): Generator<MinuteBucket> {
    return this.tileBuckets(from, to, [fine, coarse]);
  }

  /**
   * Builds the hour and day buckets over `from`…`to` again from the minutes, which are the
   * source of every coarser candle (after an import replaced minutes, or once for old markets).
   */
  rebuildRollups(from: number, to: number): void {
    // Staged minutes would be missing from the rebuilt rollups; the caller writes them first, with the record.
    for (const { size } of this.staged.values()) {
      if (size === SECOND_MS || size === MINUTE_MS) throw new Error("the staged buckets are written (all of them) before rollups are rebuilt");
    }
    for (const size of [HOUR_MS, DAY_MS] as const) {
      const first = Math.floor(from / size) * size;
      const last = Math.floor(to / size) * size;
      // An open hour or day staged would hide its rebuilt row: the row holds all of it now.
      for (const [key, staged] of this.staged)
        if (staged.size === size && staged.bucket.minute >= first && staged.bucket.minute <= last) this.staged.delete(key);
      this.sql.exec("DELETE FROM rollup_buckets WHERE size = ? AND start >= ? AND start <= ?", size, first, last);
      this.forgetRollupReads();
      let group: MinuteBucket[] = [];
      const flush = () => {
        const merged = mergeBuckets(group);
        if (merged) this.upsertBucket({ ...merged, minute: Math.floor(group[0]!.minute / size) * size }, size);
        group = [];
      };
      for (const minute of this.buckets(MINUTE_MS, first, Math.min(last + size - 1, Number.MAX_SAFE_INTEGER), "ASC")) {
        if (group.length > 0 && Math.floor(minute.minute / size) !== Math.floor(group[0]!.minute / size)) flush();
        group.push(minute);
      }
      flush();
    }
  }

  /** The bucket holding the latest trade by time, which carries the market's last price. */
  latestBucket(): MinuteBucket | undefined {
    const row = this.sql.exec("SELECT * FROM minute_buckets ORDER BY minute DESC LIMIT 1").toArray()[0];
    let latest = row ? toBucket(row) : undefined;
    for (const { size, bucket } of this.staged.values()) if (size === MINUTE_MS && (!latest || bucket.minute >= latest.minute)) latest = bucket;
    return latest;
  }
}
