import type { BookUpdate, UnitLevel } from "../market/order-book";
import type { LogRing, LogRow } from "./journal";

/** Where the book's durable state stands: its snapshot covers log entries up to `snapshotN`; entries after it, up to `logN`, are in the ring. */
export interface BookLogPosition {
  snapshotN: number;
  logN: number;
}

/** A batch's applied book updates as the publisher sent them, and when the market applied them. */
export interface BookEntry {
  time: number;
  updates: BookUpdate[];
  /** The batch's fingerprint (`order-book.ts`): an exact resend is recognised after a restart too. */
  fingerprint?: string;
}

/** Where the log stands after its last commit, and the book after the last batch that changed it: what the market's record need not be written each commit to know. */
export interface BookLatest {
  n: number;
  snapshotN: number | undefined;
  /** Absent when the rows since the snapshot changed no book and the snapshot does not say (the record does). */
  book?: { sequence: number; time: number; fingerprint: string };
}

/** The whole book at a sequence: where a segment of the history starts. */
export interface BookBase {
  sequence: number;
  time: number;
  bids: UnitLevel[];
  asks: UnitLevel[];
}

/** A closed stretch of the book's history: the book at its start and every batch after it, in order (docs/history.md#book-history). */
export interface BookSegment {
  base: BookBase;
  entries: BookEntry[];
}

/** The ring's slots; a snapshot is written at least every SNAPSHOT_EVERY entries, so the entries after one always fit. */
export const RING_SLOTS = 4_096;
/**
 * A snapshot closes a segment of this many commits: its rows (seven, with the trades' block) and
 * its R2 put come once per SNAPSHOT_EVERY commits, and a restart reads back at most this many
 * records a market (the group's journal holds JOURNAL_SLOTS ticks, as many: a market committing
 * every tick is covered by its snapshot as its oldest record would be written over).
 */
export const SNAPSHOT_EVERY = 4_096;
/** …or once the entries after it hold this many bytes: a segment is one SQLite value until it is in R2 (2 MB at most). */
export const SEGMENT_MAX_BYTES = 1_000_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS book_log (slot INTEGER PRIMARY KEY, n INTEGER NOT NULL, change TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS book_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), levels TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS book_levels (
  side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL, PRIMARY KEY (side, price));
`;

type TextLevels = [string, string][];
const encode = (levels: readonly UnitLevel[]): TextLevels => levels.map(([price, quantity]) => [price.toString(), quantity.toString()]);
const decode = (levels: TextLevels) => levels.map(([price, quantity]): UnitLevel => [BigInt(price), BigInt(quantity)]);

/** An entry as stored: `{"t":time,"u":[["s"|"d",sequence,bids,asks],…],"f":fingerprint}`, units as decimal text. */
export function encodeEntry(entry: BookEntry): string {
  return JSON.stringify({
    t: entry.time,
    u: entry.updates.map((u) => [u.type === "snapshot" ? "s" : "d", u.sequence, encode(u.bids), encode(u.asks)]),
    ...(entry.fingerprint ? { f: entry.fingerprint } : {}),
  });
}

/**
 * A ring row is one commit's record (docs/design.md#the-write-path): `{"e":[entry,…],"tr":[trade,…]}`,
 * the book entries of the commit's batches and, opaque here, their trades as the trade blocks
 * pack them with the commit's time (`a`). Before ticks a row was one batch's entry alone.
 */
export function encodeCommit(entries: readonly BookEntry[], trades: readonly unknown[], at: number): string {
  return encodeCommitOf(entries.map(encodeEntry), trades, at);
}

function encodeCommitOf(entries: readonly string[], trades: readonly unknown[], at: number): string {
  return `{"e":[${entries.join(",")}]${trades.length > 0 ? `,"tr":${JSON.stringify(trades)},"a":${at}` : ""}}`;
}

export function decodeEntry(value: { t: number; u: ["s" | "d", number, TextLevels, TextLevels][]; f?: string }): BookEntry {
  return {
    time: value.t,
    updates: value.u.map(([type, sequence, bids, asks]) => ({ type: type === "s" ? "snapshot" : "delta", sequence, bids: decode(bids), asks: decode(asks) })),
    ...(value.f ? { fingerprint: value.f } : {}),
  };
}

export function encodeBase(base: BookBase): { sequence: number; time: number; bids: TextLevels; asks: TextLevels } {
  return { sequence: base.sequence, time: base.time, bids: encode(base.bids), asks: encode(base.asks) };
}

export function decodeBase(value: { sequence: number; time: number; bids: TextLevels; asks: TextLevels }): BookBase {
  return { sequence: value.sequence, time: value.time, bids: decode(value.bids), asks: decode(value.asks) };
}

/** A stored ring entry: since the history, the batch's updates (`t`, `u`); before it, the batch's net change (`bids`, `asks`). */
type StoredChange = { t: number; u: ["s" | "d", number, TextLevels, TextLevels][]; f?: string } | { bids: TextLevels; asks: TextLevels };
/** The snapshot row: the whole book; since the history its sequence and time; since the derived record the log position and the batch's fingerprint. */
type StoredSnapshot = { bids: TextLevels; asks: TextLevels; sequence?: number; time?: number; n?: number; f?: string };

/** A ring row as stored: a commit's record, or (before ticks) one change. */
type StoredRow = { e: StoredChange[]; tr?: unknown[]; a?: number } | StoredChange;
const rowOf = (text: string): { changes: StoredChange[]; trades: unknown[]; at: number } => {
  const value = JSON.parse(text) as StoredRow;
  return "e" in value ? { changes: value.e, trades: value.tr ?? [], at: value.a ?? 0 } : { changes: [value], trades: [], at: 0 };
};

/** A commit's record read back: its entries (those from before the book history have none), its trades as packed, and its time. */
export function decodeCommit(text: string): { entries: BookEntry[]; trades: unknown[]; at: number } {
  const { changes, trades, at } = rowOf(text);
  return { entries: changes.flatMap((change) => ("u" in change ? [decodeEntry(change)] : [])), trades, at };
}
const changesOf = (text: string): StoredChange[] => rowOf(text).changes;

/** A market's own ring table: its log where it is alone in its object (before groups, and the tests' stores). */
class TableRing implements LogRing {
  constructor(private readonly sql: SqlStorage) {}

  put(n: number, change: string): void {
    this.sql.exec(
      "INSERT INTO book_log (slot, n, change) VALUES (?, ?, ?) ON CONFLICT (slot) DO UPDATE SET n = excluded.n, change = excluded.change",
      n % RING_SLOTS,
      n,
      change,
    );
  }

  rows(after: number, through = Number.MAX_SAFE_INTEGER): LogRow[] {
    return this.sql.exec<{ n: number; change: string }>("SELECT n, change FROM book_log WHERE n > ? AND n <= ? ORDER BY n", after, through).toArray();
  }

  covered(): void {}

  /** A table of the market's own: a reader's `since` is not used. */
  mark(): number {
    return 0;
  }
}

/**
 * A market's book in storage, written as a log rather than as levels (docs/design.md#the-write-path):
 * a commit (the batches of a tick: their updates, and their trades) is one row in a ring of
 * RING_SLOTS slots, overwritten in place (one row written, no delete to pay for), and the whole
 * book is one snapshot row, written every SNAPSHOT_EVERY commits (or SEGMENT_MAX_BYTES of
 * updates). A book of any depth costs one row a commit, where a row per level it touched was paid
 * before. Reading it back: the snapshot, then the ring's entries after it in order.
 *
 * When a snapshot is written, the snapshot before it and the entries between are a closed
 * segment of the book's history, handed to the caller to keep (`../history/book-history.ts`).
 *
 * Markets from before the log keep their `book_levels` rows as the base until their first
 * snapshot, which empties them; entries and snapshots from before the history carry no times, so
 * their history starts at their next snapshot.
 */
export class BookLog {
  /**
   * Bytes of the book entries after the snapshot: what bounds a segment (a commit's trades are not
   * the book's history). Read once from the ring after a restart, trades and all: a little early
   * then, never late.
   */
  private segmentBytes: number | undefined;
  /** The time of the open segment's first entry (null: it has none), read with `segmentBytes`. */
  private firstTime: number | null = null;

  private readonly ring: LogRing;

  /** `ring`: where the commits' rows go — the group's journal for a hosted market (`./journal.ts`), else its own table. */
  constructor(
    private readonly sql: SqlStorage,
    ring?: LogRing,
  ) {
    sql.exec(SCHEMA);
    this.ring = ring ?? new TableRing(sql);
  }

  /**
   * Records one commit (docs/design.md#the-write-path): its batches' applied book updates and
   * their trades, one row for all. Returns the new position (the caller stores it with the
   * market's state) and whether a snapshot was written instead — then the commit's trades are
   * not in the log, and the caller writes them elsewhere in the same transaction — with the
   * segment it closed.
   */
  append(
    position: BookLogPosition,
    entries: readonly BookEntry[],
    wholeBook: () => BookBase & { fingerprint?: string },
    trades: readonly unknown[] = [],
    at = 0,
    /** A snapshot now whatever its counts (the journal is about to overwrite this log's oldest row). */
    force = false,
  ): { position: BookLogPosition; snapshot: boolean; closed?: BookSegment } {
    const n = position.logN + 1;
    const encoded = entries.map(encodeEntry);
    const entryBytes = encoded.reduce((sum, e) => sum + e.length, 0);
    const text = encodeCommitOf(encoded, trades, at);
    this.measure(position);
    if (force || n - position.snapshotN >= SNAPSHOT_EVERY || (this.segmentBytes ?? 0) + entryBytes > SEGMENT_MAX_BYTES) {
      const closed = this.segmentBefore(position, entries);
      const book = wholeBook();
      // The snapshot carries the fingerprint of the last batch that changed the book (this commit's or an earlier one's).
      this.sql.exec(
        "INSERT INTO book_snapshot (id, levels) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET levels = excluded.levels",
        JSON.stringify({ ...encodeBase(book), n, ...(book.fingerprint ? { f: book.fingerprint } : {}) }),
      );
      if (position.snapshotN === 0 && this.sql.exec("SELECT 1 FROM book_levels LIMIT 1").toArray().length > 0) this.sql.exec("DELETE FROM book_levels");
      this.segmentBytes = 0;
      this.firstTime = null;
      this.ring.covered();
      return { position: { snapshotN: n, logN: n }, snapshot: true, ...(closed ? { closed } : {}) };
    }
    this.ring.put(n, text);
    this.segmentBytes = (this.segmentBytes ?? 0) + entryBytes;
    if (this.firstTime === null && entries.length > 0) this.firstTime = entries[0]!.time;
    return { position: { snapshotN: position.snapshotN, logN: n }, snapshot: false };
  }

  /**
   * When the open segment's first batch was applied; undefined while it has none. An hour's files
   * wait for the segment holding its end to close (`../history/market-book-history.ts`).
   */
  openedAt(position: BookLogPosition): number | undefined {
    this.measure(position);
    return this.firstTime ?? undefined;
  }

  /** The open segment's bytes and first time, read from the ring once after a load. */
  private measure(position: BookLogPosition): void {
    if (this.segmentBytes !== undefined) return;
    const rows = this.ring.rows(position.snapshotN, position.logN);
    this.segmentBytes = rows.reduce((sum, row) => sum + row.change.length, 0);
    for (const row of rows) {
      const first = changesOf(row.change).find((change) => "t" in change && change.u.length > 0);
      if (first && "t" in first) {
        this.firstTime = first.t;
        break;
      }
    }
  }

  /**
   * Where the book stood after the last logged batch, from the log itself (the newest ring entry
   * or the snapshot, whichever was written last); undefined when neither says (written before).
   * The market's record is not written each batch: it is brought up to this on load.
   */
  latest(): BookLatest | undefined {
    const snapshot = this.snapshot();
    // The newest row, and the newest entry at or before it (a commit of trades alone changed no book).
    const rows = this.ring.rows(snapshot?.n ?? 0).reverse();
    let newestN: number | undefined;
    let unknown = false;
    for (const row of rows) {
      newestN ??= row.n;
      const change = changesOf(row.change).at(-1);
      if (change && "u" in change && change.f) {
        const last = change.u[change.u.length - 1]!;
        return { n: newestN, snapshotN: snapshot?.n, book: { sequence: last[1], time: change.t, fingerprint: change.f } };
      }
      // An entry from before the fingerprints: the record says where the book is.
      if (change) {
        unknown = true;
        break;
      }
    }
    const snapshotBook =
      snapshot?.n !== undefined && snapshot.sequence !== undefined && snapshot.time !== undefined && snapshot.f !== undefined
        ? { sequence: snapshot.sequence, time: snapshot.time, fingerprint: snapshot.f }
        : undefined;
    const n = newestN ?? snapshot?.n;
    if (n === undefined) return undefined;
    return { n, snapshotN: snapshot?.n, ...(snapshotBook && !unknown ? { book: snapshotBook } : {}) };
  }

  /** Whether records after the snapshot are kept (the journal must not write over them); when none are, the ring is told so. */
  holdsRecords(position: BookLogPosition): boolean {
    if (position.logN > position.snapshotN) return true;
    this.ring.covered();
    return false;
  }

  /** The trades of the commits after the snapshot, in order, as the caller packed them, each commit's with its time (those not yet in a block are among them). */
  tradesAfterSnapshot(position: BookLogPosition): { trades: unknown[]; at: number }[] {
    return this.rows(position).flatMap((row) => {
      const { trades, at } = rowOf(row.change);
      return trades.length > 0 ? [{ trades, at }] : [];
    });
  }

  /** The segment a snapshot now closes: the stored snapshot, the ring's entries after it and `last`; none where its start carries no time. */
  private segmentBefore(position: BookLogPosition, last: readonly BookEntry[]): BookSegment | undefined {
    const base = this.base(position);
    if (!base) return undefined;
    const entries = this.entries(position);
    // None since the snapshot (a forced one, after records of trades alone): nothing to keep.
    if (!entries || entries.length + last.length === 0) return undefined;
    return { base, entries: [...entries, ...last] };
  }

  /** The book at the stored snapshot; an empty book at 0 for a market that never had one; undefined for a snapshot from before the history. */
  base(position: BookLogPosition): BookBase | undefined {
    if (position.snapshotN === 0) {
      const legacy = this.sql.exec("SELECT 1 FROM book_levels LIMIT 1").toArray().length > 0;
      return legacy ? undefined : { sequence: 0, time: 0, bids: [], asks: [] };
    }
    const stored = this.snapshot();
    if (stored?.sequence === undefined || stored.time === undefined) return undefined;
    return decodeBase(stored as Required<StoredSnapshot>);
  }

  /** The snapshot row, parsed; undefined before the first. */
  private snapshot(): StoredSnapshot | undefined {
    const row = this.sql.exec<{ levels: string }>("SELECT levels FROM book_snapshot WHERE id = 1").toArray()[0];
    return row && (JSON.parse(row.levels) as StoredSnapshot);
  }

  /**
   * The entries after the snapshot (or after record `after`, for a reader that holds those
   * before), in order; undefined when one is from before the history (no time).
   */
  entries(position: BookLogPosition, after = position.snapshotN, since = 0): BookEntry[] | undefined {
    const entries: BookEntry[] = [];
    for (const change of this.stored({ snapshotN: after, logN: position.logN }, since)) {
      if (!("u" in change)) return undefined;
      entries.push(decodeEntry(change));
    }
    return entries;
  }

  /** Where the log's ring stands now (a reader holding the records through now reads on from it: `entries`' `since`). */
  mark(): number {
    return this.ring.mark();
  }

  private stored(position: BookLogPosition, since = 0): StoredChange[] {
    return this.rows(position, since).flatMap((row) => changesOf(row.change));
  }

  /** The ring's rows after the snapshot, in order (all of them: a missing one is a fault). */
  private rows(position: BookLogPosition, since = 0): LogRow[] {
    const rows = this.ring.rows(position.snapshotN, position.logN, since);
    if (rows.length !== position.logN - position.snapshotN) {
      throw new Error(`the book log holds ${rows.length} entries after its snapshot, ${position.logN - position.snapshotN} were written`);
    }
    return rows;
  }

  /** The book as stored: the snapshot (or a pre-log market's levels), then each logged change after it. */
  read(position: BookLogPosition): { bids: UnitLevel[]; asks: UnitLevel[] } {
    const sides = { bids: new Map<bigint, bigint>(), asks: new Map<bigint, bigint>() };
    const levels = position.snapshotN > 0 ? this.snapshot() : undefined;
    if (levels) {
      for (const side of ["bids", "asks"] as const) for (const [price, quantity] of decode(levels[side])) sides[side].set(price, quantity);
    } else {
      for (const row of this.sql.exec<{ side: "bids" | "asks"; price: string; quantity: string }>("SELECT side, price, quantity FROM book_levels")) {
        sides[row.side].set(BigInt(row.price), BigInt(row.quantity));
      }
    }
    const put = (side: "bids" | "asks", levels: TextLevels) => {
      for (const [price, quantity] of decode(levels)) {
        if (quantity === 0n) sides[side].delete(price);
        else sides[side].set(price, quantity);
      }
    };
    for (const change of this.stored(position)) {
      // Before the history an entry was the batch's net change; since, the updates themselves.
      const updates = "u" in change ? change.u : [["d", 0, change.bids, change.asks] as const];
      for (const [type, , bids, asks] of updates) {
        if (type === "s") {
          sides.bids.clear();
          sides.asks.clear();
        }
        put("bids", bids);
        put("asks", asks);
      }
    }
    return { bids: [...sides.bids], asks: [...sides.asks] };
  }
}
