import type { UnitLevel } from "../domain/order-book";
import {
  type BookBase,
  type BookEntry,
  type BookSegment,
  changesOf,
  closedSegment,
  decode,
  decodeBase,
  decodeEntry,
  encodeBase,
  encodeCommitOf,
  lastSequenceOf,
  rowOf,
  type StoredChange,
  type StoredSnapshot,
  type StoredUpdate,
  segmentEntry,
  type TextLevels,
  withFingerprint,
} from "./book-entries";
import type { LogRing, LogRow } from "./journal";
import { addEntry, type ClosedSegment, type OpenSegments, type OpenSegmentText, openSegments, segmentText } from "./open-segments";
import { TableRing } from "./table-ring";

/**
 * What a restart needs to recognise resends of the last applied updates: the fingerprints the
 * snapshot kept (oldest first) and the updates logged after it, as stored.
 */
export interface StoredResends {
  kept: [number, string][];
  updates: StoredUpdate[];
}

/** Where the book's durable state stands: its snapshot covers log entries up to `snapshotN`; entries after it, up to `logN`, are in the ring. */
export interface BookLogPosition {
  snapshotN: number;
  logN: number;
}

/** Where the log stands after its last commit, and the book after the last batch that changed it: what the market's record need not be written each commit to know. */
export interface BookLatest {
  n: number;
  snapshotN: number | undefined;
  /** Absent when the rows since the snapshot changed no book and the snapshot does not say (the record does). */
  book?: { sequence: number; time: number; fingerprint: string };
}

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
`;

/**
 * A market's book in storage, written as a log rather than as levels (docs/design.md#the-write-path):
 * a commit (the batches of a tick: their updates, and their trades) is one row in a ring of
 * RING_SLOTS slots (`table-ring.ts`), overwritten in place (one row written, no delete to pay for), and the whole
 * book is one snapshot row, written every SNAPSHOT_EVERY commits (or SEGMENT_MAX_BYTES of
 * updates). A book of any depth costs one row a commit, where a row per level it touched was paid
 * before. Reading it back: the snapshot, then the ring's entries after it in order.
 *
 * When a snapshot is written, the snapshot before it and the entries between are a closed
 * segment of the book's history, handed to the caller to keep (`../history/book-history.ts`).
 *
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
  /** Where the open segment's text is held as it grows (`./open-segments.ts`), and this market's key there. */
  private readonly opens: { segments: OpenSegments; key: string };

  /**
   * `ring`: where the commits' rows go — the group's journal for a hosted market (`./journal.ts`),
   * else its own table; `opens`: the host's open segment texts (else a map of its own).
   */
  constructor(
    private readonly sql: SqlStorage,
    ring?: LogRing,
    opens?: { segments: OpenSegments; key: string },
  ) {
    sql.exec(SCHEMA);
    this.ring = ring ?? new TableRing(sql);
    this.opens = opens ?? { segments: openSegments(), key: "" };
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
    /** The book now, with its last batch's fingerprint and the last updates' (`recent`, oldest first): a restart recognises their resends. */
    wholeBook: () => BookBase & { fingerprint?: string; recent?: readonly (readonly [number, string])[] },
    trades: readonly unknown[] = [],
    at = 0,
    /** A snapshot now whatever its counts (the journal is about to overwrite this log's oldest row). */
    force = false,
  ): { position: BookLogPosition; snapshot: boolean; closed?: ClosedSegment } {
    const n = position.logN + 1;
    const kept = entries.map(segmentEntry);
    const encoded = entries.map((entry, i) => withFingerprint(kept[i]!, entry.fingerprint));
    const entryBytes = encoded.reduce((sum, e) => sum + e.length, 0);
    const text = encodeCommitOf(encoded, trades, at);
    this.measure(position);
    if (force || n - position.snapshotN >= SNAPSHOT_EVERY || (this.segmentBytes ?? 0) + entryBytes > SEGMENT_MAX_BYTES) {
      const closed = this.close(position, entries, kept);
      const book = wholeBook();
      const base = JSON.stringify(encodeBase(book));
      // The snapshot carries the fingerprint of the last batch that changed the book (this commit's or an earlier one's).
      this.sql.exec(
        "INSERT INTO book_snapshot (id, levels) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET levels = excluded.levels",
        `${base.slice(0, -1)},"n":${n}${book.fingerprint ? `,"f":${JSON.stringify(book.fingerprint)}` : ""}${book.recent?.length ? `,"r":${JSON.stringify(book.recent)}` : ""}}`,
      );
      this.segmentBytes = 0;
      this.firstTime = null;
      this.ring.covered();
      this.opens.segments.set(this.opens.key, { snapshotN: n, logN: n, baseSeq: book.sequence, baseTime: book.time, base, entries: [], chars: 0 });
      return { position: { snapshotN: n, logN: n }, snapshot: true, ...(closed ? { closed } : {}) };
    }
    this.ring.put(n, text);
    this.extend(position, n, entries, kept);
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
      const first = changesOf(row.change).find((change) => change.u.length > 0);
      if (first) {
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
      if (change?.f) {
        const last = change.u[change.u.length - 1]!;
        return { n: newestN, snapshotN: snapshot?.n, book: { sequence: last[1], time: change.t, fingerprint: change.f } };
      }
      // An entry without a fingerprint: the record says where the book is.
      if (change) {
        unknown = true;
        break;
      }
    }
    const snapshotBook = snapshot?.f !== undefined ? { sequence: snapshot.sequence, time: snapshot.time, fingerprint: snapshot.f } : undefined;
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

  /**
   * The segment a snapshot now closes, with `last` (the closing commit's entries, `kept` their
   * segment texts): joined from the open text when it is held and current, else read back.
   */
  private close(position: BookLogPosition, last: readonly BookEntry[], kept: readonly string[]): ClosedSegment | undefined {
    const open = this.currentOpen(position);
    if (!open) {
      const segment = this.segmentBefore(position, last);
      return segment && closedSegment(segment);
    }
    this.opens.segments.delete(this.opens.key);
    const end = last[last.length - 1];
    if (!end && open.lastSeq === undefined) return undefined;
    return {
      baseSeq: open.baseSeq,
      firstTime: open.baseTime,
      lastSeq: end ? lastSequenceOf(end) : open.lastSeq!,
      lastTime: end ? end.time : open.lastTime!,
      text: segmentText(open.base, kept.length > 0 ? [...open.entries, ...kept] : open.entries),
    };
  }

  /** A commit of record `n` went into the ring: its entries join the open text (dropped when it was not current). */
  private extend(position: BookLogPosition, n: number, entries: readonly BookEntry[], kept: readonly string[]): void {
    const open = this.currentOpen(position);
    if (!open) return;
    for (const [i, entry] of entries.entries()) addEntry(open, kept[i]!, lastSequenceOf(entry), entry.time);
    open.logN = n;
    // Set again: its bytes are counted anew, and past the host's bound the least recent go.
    this.opens.segments.set(this.opens.key, open);
  }

  /**
   * The open segment as its text is held, when current at `position`: the base's JSON and the
   * entries' (a copy of the list: later commits do not change it). A history read decodes it a
   * slice at a time instead of reading the segment's records back in one turn.
   */
  openText(position: BookLogPosition): { base: string; entries: string[] } | undefined {
    const open = this.currentOpen(position);
    return open && { base: open.base, entries: open.entries.slice() };
  }

  /**
   * The open text when it holds exactly the records through `position` (a commit whose part was
   * undone, or a restart, leaves it behind: it is dropped, and the close reads back instead).
   */
  private currentOpen(position: BookLogPosition): OpenSegmentText | undefined {
    const open = this.opens.segments.peek(this.opens.key);
    if (open && open.snapshotN === position.snapshotN && open.logN === position.logN) return open;
    if (open) this.opens.segments.delete(this.opens.key);
    return undefined;
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

  /** The book at the stored snapshot; an empty book at 0 for a market that never had one. */
  base(position: BookLogPosition): BookBase | undefined {
    if (position.snapshotN === 0) return { sequence: 0, time: 0, bids: [], asks: [] };
    const stored = this.snapshot();
    return stored && decodeBase(stored);
  }

  /** The snapshot row, parsed; undefined before the first. */
  private snapshot(): StoredSnapshot | undefined {
    const row = this.sql.exec<{ levels: string }>("SELECT levels FROM book_snapshot WHERE id = 1").toArray()[0];
    return row && (JSON.parse(row.levels) as StoredSnapshot);
  }

  /**
   * The entries after the snapshot (or after record `after`, for a reader that holds those
   * before), in order.
   */
  entries(position: BookLogPosition, after = position.snapshotN, since = 0): BookEntry[] | undefined {
    const entries: BookEntry[] = [];
    for (const change of this.stored({ snapshotN: after, logN: position.logN }, since)) {
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

  /**
   * The book as stored: the snapshot, then each logged change after
   * it. A market's load reads it, and what its next append would read back again is kept from it
   * (`loaded`).
   */
  read(position: BookLogPosition): { bids: UnitLevel[]; asks: UnitLevel[]; resends: StoredResends } {
    const sides = { bids: new Map<bigint, bigint>(), asks: new Map<bigint, bigint>() };
    const levels = position.snapshotN > 0 ? this.snapshot() : undefined;
    if (levels) for (const side of ["bids", "asks"] as const) for (const [price, quantity] of decode(levels[side])) sides[side].set(price, quantity);
    const put = (side: "bids" | "asks", levels: TextLevels) => {
      for (const [price, quantity] of decode(levels)) {
        if (quantity === 0n) sides[side].delete(price);
        else sides[side].set(price, quantity);
      }
    };
    const rows = this.rows(position);
    const changes = rows.flatMap((row) => changesOf(row.change));
    for (const change of changes) {
      for (const [type, , bids, asks] of change.u) {
        if (type === "s") {
          sides.bids.clear();
          sides.asks.clear();
        }
        put("bids", bids);
        put("asks", asks);
      }
    }
    this.loaded(position, levels, rows, changes);
    const updates = changes.flatMap((change) => change.u);
    return { bids: [...sides.bids], asks: [...sides.asks], resends: { kept: levels?.r ?? [], updates } };
  }

  /**
   * After a load's read: the open segment's bytes and first time (`measure` reads them no more)
   * and its text, held as the commits would have held it (`opens`) — its changes are parsed for
   * the book anyway, and the market's first close after a start joins too.
   */
  private loaded(position: BookLogPosition, snapshot: StoredSnapshot | undefined, rows: LogRow[], changes: StoredChange[]): void {
    this.segmentBytes = rows.reduce((sum, row) => sum + row.change.length, 0);
    const first = changes.find((change) => change.u.length > 0);
    this.firstTime = first ? first.t : null;
    // The segment's base as `base()` reads it.
    const base = snapshot
      ? { sequence: snapshot.sequence, time: snapshot.time, bids: snapshot.bids, asks: snapshot.asks }
      : position.snapshotN === 0 && { sequence: 0, time: 0, bids: [], asks: [] };
    if (!base) return;
    const open: OpenSegmentText = { ...position, baseSeq: base.sequence, baseTime: base.time, base: JSON.stringify(base), entries: [], chars: 0 };
    for (const change of changes) {
      if (change.u.length === 0) return;
      // As `segmentEntry` writes it: the stored units are its decimal text already.
      addEntry(open, JSON.stringify({ t: change.t, u: change.u }), change.u[change.u.length - 1]![1], change.t);
    }
    this.opens.segments.set(this.opens.key, open);
  }
}
