/**
 * A group's journal (docs/design.md#the-write-path): each tick of the object hosting the group's
 * markets is one row holding every record its markets committed in it — where each market wrote a
 * row of its own. The rows are a ring of JOURNAL_SLOTS, overwritten in place (one row written, no
 * delete), so the journal keeps about the last JOURNAL_SLOTS ticks.
 *
 * A row is `{"SYM":[n,"record"],…,"~first":["SYM",…]}`: each market's record as text, with the
 * market's own number for it (its book log's `n`), and the markets whose uncovered records begin
 * in this row. A market reads its records back by its key, which SQLite picks out
 * of each row (`json_extract`) without the rest being parsed here.
 *
 * A market's records after its book snapshot are its log, so they must not be overwritten: before
 * a row is written over a tick holding such records, the market writes a snapshot (`dueForCover`,
 * then the market's `coverJournal`). A market snapshots on its own every SNAPSHOT_EVERY (4,096) of
 * its records or at the cover, whichever comes first: a market committing every tick at about the
 * same time either way; a quiet one pays a snapshot each JOURNAL_SLOTS ticks.
 */

import { ringSlots } from "../core/ring-slots";

/** The ring's rows: at 10 ticks a second about seven minutes of the group's ticks. */
const JOURNAL_SLOTS = 4_096;

const SCHEMA = "CREATE TABLE IF NOT EXISTS journal (slot INTEGER PRIMARY KEY, n INTEGER NOT NULL, body TEXT NOT NULL)";

/** A market's records as its book log reads them: its own numbers, their text. */
export interface LogRow {
  n: number;
  change: string;
}

/** Where a market's log rows live: its own table (`book-log.ts`), or its group's journal. */
export interface LogRing {
  /** Writes the record numbered `n` (in the journal: with the tick's row). */
  put(n: number, change: string): void;
  /**
   * The records numbered after `after`, through `through` if given, ascending; a reader that read
   * every record through `after` at the ring's `mark` gives it as `since`, and only rows written
   * since then are read.
   */
  rows(after: number, through?: number, since?: number): LogRow[];
  /** Where the ring stands now: every record written so far is in a row at or before it. */
  mark(): number;
  /** A snapshot now covers every record written so far: none of them is needed any more. */
  covered(): void;
}

const pathOf = (symbol: string) => `$."${symbol}"`;

/** A row's mark: the markets whose oldest uncovered record is in it, in every row (no symbol has a `~`). */
const FIRST_KEY = "~first";

/**
 * Records of a market that could not cover them (it fails to load: docs/design.md#isolation),
 * moved out of the ring before a row is written over them, until its snapshot covers them.
 */
const KEPT_SCHEMA =
  "CREATE TABLE IF NOT EXISTS journal_kept (symbol TEXT NOT NULL, n INTEGER NOT NULL, change TEXT NOT NULL, PRIMARY KEY (symbol, n)) WITHOUT ROWID";

export class GroupJournal {
  /** The ring's rows (a test makes it small). */
  slots = JOURNAL_SLOTS;
  /** The number of the last row written. */
  private n: number;
  /** The records of the tick being committed, by market. */
  private readonly pending = new Map<string, [number, string]>();
  /** Per market, the row of its oldest record that its snapshot does not cover. */
  private readonly uncovered = new Map<string, number>();
  /** Markets first uncovered by the tick being committed (a market's part that fails is undone: `drop`). */
  private readonly uncoveredNow = new Set<string>();
  /** The last market's records read from the ring, while no row has been written since (`ringRecords`). */
  private lastRead: { symbol: string; n: number; from: number; records: (LogRow & { row: number })[] } | undefined;
  /** Markets with records moved to `journal_kept` (`keepAside`). */
  private readonly keptAside = new Set<string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    this.n = sql.exec<{ n: number | null }>("SELECT max(n) AS n FROM journal").one().n ?? 0;
    // Where each market's uncovered records begin, from the rows' marks (FIRST_KEY): a market's
    // newest mark (one covered since and quiet keeps its mark: counted as uncovered, it finds at
    // its cover that its snapshot already covers them, as every market did after a start before).
    for (const row of sql.exec<{ n: number; first: string }>(
      `SELECT n, json_extract(body, '$."${FIRST_KEY}"') AS first FROM journal WHERE first IS NOT NULL ORDER BY n`,
    )) {
      for (const symbol of JSON.parse(row.first) as string[]) this.uncovered.set(symbol, row.n);
    }
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'journal_kept'").toArray().length > 0) {
      for (const row of sql.exec<{ symbol: string }>("SELECT DISTINCT symbol FROM journal_kept")) this.keptAside.add(row.symbol);
    }
  }

  /** One market's view: its records, numbered its own way, in the group's rows. */
  ringOf(symbol: string): LogRing {
    return {
      put: (n, change) => {
        this.pending.set(symbol, [n, change]);
        if (!this.uncovered.has(symbol)) {
          this.uncovered.set(symbol, this.n + 1);
          this.uncoveredNow.add(symbol);
        }
      },
      rows: (after, through = Number.MAX_SAFE_INTEGER, since = 0) => this.rowsOf(symbol, after, through, since),
      mark: () => this.n,
      covered: () => {
        this.uncovered.delete(symbol);
        if (this.keptAside.delete(symbol)) this.sql.exec("DELETE FROM journal_kept WHERE symbol = ?", symbol);
      },
    };
  }

  /** Whether the tick holds a record to write. */
  get staged(): boolean {
    return this.pending.size > 0;
  }

  /** The markets whose oldest uncovered record the next row would overwrite: each must cover it first. */
  dueForCover(): string[] {
    const overwritten = this.n + 1 - this.slots;
    return [...this.uncovered].filter(([, first]) => first <= overwritten).map(([symbol]) => symbol);
  }

  /** One market's part of the tick failed and was undone: its record is not written. */
  drop(symbol: string): void {
    this.pending.delete(symbol);
    if (this.uncoveredNow.has(symbol)) this.uncovered.delete(symbol);
  }

  /**
   * A market due for its cover cannot write a snapshot (it fails to load): its uncovered records
   * are moved out of the ring, into `journal_kept`, so the group's next row overwrites nothing
   * it still needs — the group goes on committing and the market loses nothing. Its records are
   * read from there with the ring's until its snapshot covers them. Inside the commit's transaction.
   */
  keepAside(symbol: string): void {
    const from = this.uncovered.get(symbol);
    if (from === undefined) return;
    const path = pathOf(symbol);
    this.sql.exec(KEPT_SCHEMA);
    this.sql.exec(
      `INSERT OR IGNORE INTO journal_kept (symbol, n, change)
       SELECT ?, json_extract(part, '$[0]'), json_extract(part, '$[1]') FROM (SELECT json_extract(body, ?) AS part FROM journal WHERE n >= ?) WHERE part IS NOT NULL`,
      symbol,
      path,
      from,
    );
    this.keptAside.add(symbol);
    // Its record in the row being written (if any) is the oldest it still has in the ring.
    if (this.pending.has(symbol)) this.uncovered.set(symbol, this.n + 1);
    else this.uncovered.delete(symbol);
  }

  /**
   * Writes the tick's records as one row (inside the commit's transaction), marked with the
   * markets whose uncovered records begin in it: a restarted host reads the marks, not every
   * market's place in every row, and loads no market its snapshot covers.
   */
  write(): void {
    this.uncoveredNow.clear();
    if (this.pending.size === 0) return;
    const n = this.n + 1;
    const first = [...this.pending.keys()].filter((symbol) => this.uncovered.get(symbol) === n);
    // Marked even when empty: every row holds the key.
    const body = JSON.stringify({ ...Object.fromEntries(this.pending), [FIRST_KEY]: first });
    this.sql.exec(
      "INSERT INTO journal (slot, n, body) VALUES (?, ?, ?) ON CONFLICT (slot) DO UPDATE SET n = excluded.n, body = excluded.body",
      n % this.slots,
      n,
      body,
    );
    this.n = n;
    this.pending.clear();
  }

  /** A failed commit: what the tick staged is gone with it (the object starts again from storage). */
  discard(): void {
    this.pending.clear();
    this.uncoveredNow.clear();
  }

  /**
   * A market's records in the ring's rows from row `from`, each with its row's number. The last
   * market's are held until a row is written: a market's load reads its log several times over
   * (where it stands, its entries, its trades, its segment's bytes), each a pass over up to the
   * whole ring's rows, and a restarted host loads its markets one after another.
   */
  private ringRecords(symbol: string, from: number): (LogRow & { row: number })[] {
    const held = this.lastRead;
    if (held && held.symbol === symbol && held.n === this.n && held.from <= from) return held.records;
    const path = pathOf(symbol);
    const records: (LogRow & { row: number })[] = [];
    for (const row of this.sql.exec<{ n: number; part: string }>(
      // Unordered (a sorter's rows are read again): sorted by the caller.
      `SELECT n, json_extract(body, ?) AS part FROM journal WHERE ${ringSlots(from, this.n, this.slots)} AND n >= ? AND json_extract(body, ?) IS NOT NULL`,
      path,
      from,
      path,
    )) {
      const [n, change] = JSON.parse(row.part) as [number, string];
      records.push({ row: row.n, n, change });
    }
    this.lastRead = { symbol, n: this.n, from, records };
    return records;
  }

  private rowsOf(symbol: string, after: number, through: number, since: number): LogRow[] {
    // Only rows from the market's oldest uncovered one can hold what a log asks for: their slots,
    // not the whole ring (a market that wrote its snapshot a moment ago reads a few rows); and of
    // those, only the rows after `since` (a reader holding the records before).
    const from = Math.max(this.uncovered.get(symbol) ?? this.n + 1, since + 1);
    const rows = this.ringRecords(symbol, from)
      .filter((record) => record.row >= from && record.n > after && record.n <= through)
      .map(({ n, change }) => ({ n, change }));
    if (this.keptAside.has(symbol)) {
      // After a restart the ring's rows may hold some of them still.
      const read = new Set(rows.map((row) => row.n));
      for (const row of this.sql.exec<{ n: number; change: string }>(
        "SELECT n, change FROM journal_kept WHERE symbol = ? AND n > ? AND n <= ?",
        symbol,
        after,
        through,
      )) {
        if (!read.has(row.n)) rows.push({ n: row.n, change: row.change });
      }
    }
    const staged = this.pending.get(symbol);
    if (staged && staged[0] > after && staged[0] <= through) rows.push({ n: staged[0], change: staged[1] });
    return rows.sort((a, b) => a.n - b.n);
  }
}
