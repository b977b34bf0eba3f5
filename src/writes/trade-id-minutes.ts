/**
 * The ids of a market's trades, kept so that a resend within 25 hours is recognised as a
 * duplicate at any rate (docs/publishing.md#resending) — without a row per trade.
 *
 * A resend is the same trade again: the same id and the same time. So ids are kept by the minute
 * of the trade's time, packed: what the market took since its last write is held in memory (and
 * rebuilt after a restart from the stored trades, like the staged candle buckets) and written
 * with the buckets about once a minute, one row per minute of trade time those trades reach, in
 * a table per hour of receipt (`trade_ids_{hour}`) dropped whole once its hour ended 25 hours
 * ago, so expiry writes nothing per id. A lookup reads only the rows of its trades' minutes (at
 * most a few, cached for the minutes being traded). Rows whose trades are still hot when their
 * hour expires move to `trade_ids_hot` until the trades are archived: a hot trade stays known.
 *
 * Cost: about one row a market-minute (a trade late by minutes adds the row of its minute); no
 * index beyond the key. Memory: the ids taken since the last write (≤ PENDING_MAX_BYTES), those of
 * the last write (known by id alone until the next), and the cached minutes (≤ CACHED_MINUTES).
 */
import { HOUR_MS, MINUTE_MS } from "../domain/intervals";
import { scopeOf } from "./market-storage";
import { idTextBytes } from "./trade-blocks";

/** An id is kept at least this long after its trade was taken. */
export const RECENT_ID_MS = 25 * HOUR_MS;
/** The ids waiting to be written are written sooner than the minute once they reach this size (a row is at most 2 MB). */
export const PENDING_MAX_BYTES = 1_000_000;
/** An id's bytes in its row (what PENDING_MAX_BYTES counts): its UTF-8 JSON text and its packed entry's rest (a 16-digit seq, brackets, commas). */
export const idBytes = (id: string) => idTextBytes(id) + 20;
/** Minutes of trade time whose ids are held in memory for lookups. */
const CACHED_MINUTES = 4;

const HOT = "trade_ids_hot";
const columns = "(minute INTEGER NOT NULL, n INTEGER NOT NULL, max_seq INTEGER NOT NULL, ids TEXT NOT NULL, PRIMARY KEY (minute, n)) WITHOUT ROWID";

/** The hour an id taken at `now` is kept under. */
export function idHour(now: number): number {
  return Math.floor(now / HOUR_MS);
}

/** Whether an hour's ids may be dropped at `now`: the last of them was taken ≥ RECENT_ID_MS ago. */
export function hourExpired(hour: number, now: number): boolean {
  return (hour + 1) * HOUR_MS + RECENT_ID_MS <= now;
}

/** A row's ids: each with its trade id number (`seq`), which says whether the trade is still hot. */
type Packed = [id: string, seq: number][];

/** The hours of a store's tables named `{prefix}{hour}`, ascending. */
function hourTables(sql: SqlStorage, prefix: string): number[] {
  // In a host's shared database the market's tables carry its prefix too (`market-storage.ts`).
  const named = scopeOf(sql) + prefix;
  const pattern = new RegExp(`^${named}(\\d+)$`);
  return sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?", `${named}%`)
    .toArray()
    .flatMap((row) => {
      const match = pattern.exec(row.name);
      return match ? [Number(match[1])] : [];
    })
    .sort((a, b) => a - b);
}

/** The minute an id is kept under: its trade's time. */
const minuteOf = (time: number): number => Math.floor(time / MINUTE_MS);

export class TradeIdMinutes {
  /** The hours with a table, ascending (read once from the schema). */
  private hours: number[] | undefined;
  /** Ids taken since the last write, by minute of trade time, with the highest trade id among them. */
  private pending = new Map<number, { ids: Packed; maxSeq: number }>();
  /** The same ids, for a lookup by id alone (a resend before the write is known whatever its time). */
  private pendingIds = new Set<string>();
  /** The ids of the last write, by id alone too: a resend soon after the minute's write is known whatever its time. */
  private lastWritten = new Set<string>();
  private lastWrittenHour = 0;
  private bytes = 0;
  /** Every id kept for a minute, stored and pending, for the minutes looked up last (least recent first). */
  private cache = new Map<number, Set<string>>();
  /** The key of the last row written, so that two writes never share one. */
  private lastN = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS ${HOT} ${columns}`);
  }

  /** Ids waiting to be written, and their size. */
  get pendingCount(): number {
    return this.pendingIds.size;
  }

  get pendingBytes(): number {
    return this.bytes;
  }

  private tables(): number[] {
    this.hours ??= hourTables(this.sql, "trade_ids_");
    return this.hours;
  }

  /** Every id kept for a minute of trade time: from the rows of its minute in each table, and what waits. */
  private minute(minute: number): Set<string> {
    const cached = this.cache.get(minute);
    if (cached) {
      this.cache.delete(minute);
      this.cache.set(minute, cached);
      return cached;
    }
    const ids = new Set<string>();
    for (const table of [HOT, ...this.tables().map((hour) => `trade_ids_${hour}`)]) {
      for (const row of this.sql.exec<{ ids: string }>(`SELECT ids FROM ${table} WHERE minute = ?`, minute)) {
        for (const [id] of JSON.parse(row.ids) as Packed) ids.add(id);
      }
    }
    for (const [id] of this.pending.get(minute)?.ids ?? []) ids.add(id);
    this.cache.set(minute, ids);
    if (this.cache.size > CACHED_MINUTES) this.cache.delete(this.cache.keys().next().value!);
    return ids;
  }

  /** Which of `trades` were taken before (by id within the minute of their time; by id alone while unwritten). */
  among(trades: readonly { id: string; time: number }[]): Set<string> {
    const found = new Set<string>();
    for (const trade of trades) {
      if (this.pendingIds.has(trade.id) || this.lastWritten.has(trade.id) || this.minute(minuteOf(trade.time)).has(trade.id)) found.add(trade.id);
    }
    return found;
  }

  /** Keeps the ids of trades just taken (in memory until the next `write`, which the caller makes durable). */
  remember(trades: readonly { id: string; seq: number; time: number }[]): void {
    for (const trade of trades) {
      const minute = minuteOf(trade.time);
      const entry = this.pending.get(minute) ?? { ids: [], maxSeq: 0 };
      if (entry.ids.length === 0) this.pending.set(minute, entry);
      entry.ids.push([trade.id, trade.seq]);
      entry.maxSeq = Math.max(entry.maxSeq, trade.seq);
      this.pendingIds.add(trade.id);
      this.bytes += idBytes(trade.id);
      this.cache.get(minute)?.add(trade.id);
    }
  }

  /** Whether a write holding back the minutes from `heldFrom` on would write a row. */
  writable(heldFrom = Number.POSITIVE_INFINITY): boolean {
    for (const minute of this.pending.keys()) if (minute * MINUTE_MS < heldFrom) return true;
    return false;
  }

  /**
   * Writes what waits: one row a minute of trade time, in the table of the hour it is written
   * (inside the caller's transaction) — but the minutes from `heldFrom` on (the one still being
   * traded), which wait for a later write with their candle buckets.
   */
  write(now: number, heldFrom = Number.POSITIVE_INFINITY): void {
    if (!this.writable(heldFrom)) return;
    const hour = idHour(now);
    const hours = this.tables();
    if (!hours.includes(hour)) {
      this.sql.exec(`CREATE TABLE IF NOT EXISTS trade_ids_${hour} ${columns}`);
      hours.push(hour);
      hours.sort((a, b) => a - b);
    }
    this.lastN = Math.max(this.lastN + 1, now);
    const held = new Map<number, { ids: Packed; maxSeq: number }>();
    const written = new Set<string>();
    for (const [minute, entry] of this.pending) {
      if (minute * MINUTE_MS >= heldFrom) {
        held.set(minute, entry);
        continue;
      }
      this.sql.exec(`INSERT INTO trade_ids_${hour} (minute, n, max_seq, ids) VALUES (?, ?, ?, ?)`, minute, this.lastN, entry.maxSeq, JSON.stringify(entry.ids));
      for (const [id] of entry.ids) written.add(id);
    }
    this.pending = held;
    this.lastWritten = written;
    this.lastWrittenHour = hour;
    this.pendingIds = new Set();
    this.bytes = 0;
    for (const entry of held.values()) {
      for (const [id] of entry.ids) {
        this.pendingIds.add(id);
        this.bytes += idBytes(id);
      }
    }
  }

  /**
   * Drops the hours whose ids are all older than TRADE_ID_KEPT_MS at `now`; their rows holding a
   * trade not yet archived (`max_seq` above `archivedThrough`) move to the hot table until it is.
   */
  forget(now: number, archivedThrough: number): void {
    const hours = this.tables();
    let dropped = false;
    while (hours.length > 0 && hourExpired(hours[0]!, now)) {
      const table = `trade_ids_${hours.shift()}`;
      // A quiet market's hour: keep the ids of its trades not yet archived, and only those.
      const rows = this.sql
        .exec<{ minute: number; n: number; max_seq: number; ids: string }>(`SELECT * FROM ${table} WHERE max_seq > ?`, archivedThrough)
        .toArray();
      for (const row of rows) {
        const hot = (JSON.parse(row.ids) as Packed).filter(([, seq]) => seq > archivedThrough);
        this.sql.exec(`INSERT OR IGNORE INTO ${HOT} (minute, n, max_seq, ids) VALUES (?, ?, ?, ?)`, row.minute, row.n, row.max_seq, JSON.stringify(hot));
      }
      this.sql.exec(`DROP TABLE IF EXISTS ${table}`);
      dropped = true;
    }
    if (this.sql.exec(`DELETE FROM ${HOT} WHERE max_seq <= ?`, archivedThrough).rowsWritten > 0) dropped = true;
    if (dropped) this.cache.clear();
    if (hourExpired(this.lastWrittenHour, now)) this.lastWritten = new Set();
  }
}
