/**
 * A market's book log ring as a table of its own (`book_log`, created by `BookLog`): where a market
 * is alone in its object — before groups, and the tests' stores. A group's markets share its
 * journal instead (`journal.ts`).
 */
import type { LogRing, LogRow } from "./journal";

/** The ring's slots; a snapshot is written at least every SNAPSHOT_EVERY entries, so the entries after one always fit. */
const RING_SLOTS = 4_096;

/** A market's own ring table: its log where it is alone in its object (before groups, and the tests' stores). */
export class TableRing implements LogRing {
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
