import type { UnitLevel } from "./order-book";

/** Where the book's durable state stands: its snapshot covers log entries up to `snapshotN`; entries after it, up to `logN`, are in the ring. */
export interface BookLogPosition {
  snapshotN: number;
  logN: number;
}

/** A batch's net change to the book: each touched level's final quantity (0: removed). */
export interface BookChange {
  bids: UnitLevel[];
  asks: UnitLevel[];
}

/** The ring's slots; a snapshot is written at least every SNAPSHOT_EVERY entries, so the entries after one always fit. */
export const RING_SLOTS = 1_024;
export const SNAPSHOT_EVERY = 512;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS book_log (slot INTEGER PRIMARY KEY, n INTEGER NOT NULL, change TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS book_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), levels TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS book_levels (
  side TEXT NOT NULL, price TEXT NOT NULL, quantity TEXT NOT NULL, PRIMARY KEY (side, price));
`;

const encode = (levels: readonly UnitLevel[]) => levels.map(([price, quantity]) => [price.toString(), quantity.toString()]);
const decode = (levels: [string, string][]) => levels.map(([price, quantity]): UnitLevel => [BigInt(price), BigInt(quantity)]);

/**
 * A market's book in storage, written as a log rather than as levels (docs/design.md#the-write-path):
 * a batch's change is one row in a ring of RING_SLOTS slots, overwritten in place (one row written,
 * no delete to pay for), and the whole book is one snapshot row, written when the batch holds a
 * snapshot or SNAPSHOT_EVERY entries after the last. A book of any depth costs one row a batch,
 * where a row per level it touched was paid before. Reading it back: the snapshot, then the ring's
 * entries after it in order.
 *
 * Markets from before the log keep their `book_levels` rows as the base until their first snapshot,
 * which empties them.
 */
export class BookLog {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }

  /** Records a batch's change; returns the new position (the caller stores it with the market's state). */
  append(position: BookLogPosition, change: BookChange, wholeBook: () => BookChange, snapshot: boolean): BookLogPosition {
    const n = position.logN + 1;
    if (snapshot || n - position.snapshotN >= SNAPSHOT_EVERY) {
      const book = wholeBook();
      this.sql.exec(
        "INSERT INTO book_snapshot (id, levels) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET levels = excluded.levels",
        JSON.stringify({ bids: encode(book.bids), asks: encode(book.asks) }),
      );
      if (position.snapshotN === 0 && this.sql.exec("SELECT 1 FROM book_levels LIMIT 1").toArray().length > 0) this.sql.exec("DELETE FROM book_levels");
      return { snapshotN: n, logN: n };
    }
    this.sql.exec(
      "INSERT INTO book_log (slot, n, change) VALUES (?, ?, ?) ON CONFLICT (slot) DO UPDATE SET n = excluded.n, change = excluded.change",
      n % RING_SLOTS,
      n,
      JSON.stringify({ bids: encode(change.bids), asks: encode(change.asks) }),
    );
    return { snapshotN: position.snapshotN, logN: n };
  }

  /** The book as stored: the snapshot (or a pre-log market's levels), then each logged change after it. */
  read(position: BookLogPosition): BookChange {
    const sides = { bids: new Map<bigint, bigint>(), asks: new Map<bigint, bigint>() };
    const snapshot = this.sql.exec<{ levels: string }>("SELECT levels FROM book_snapshot WHERE id = 1").toArray()[0];
    if (snapshot && position.snapshotN > 0) {
      const levels = JSON.parse(snapshot.levels) as { bids: [string, string][]; asks: [string, string][] };
      for (const side of ["bids", "asks"] as const) for (const [price, quantity] of decode(levels[side])) sides[side].set(price, quantity);
    } else {
      for (const row of this.sql.exec<{ side: "bids" | "asks"; price: string; quantity: string }>("SELECT side, price, quantity FROM book_levels")) {
        sides[row.side].set(BigInt(row.price), BigInt(row.quantity));
      }
    }
    const entries = this.sql
      .exec<{ n: number; change: string }>("SELECT n, change FROM book_log WHERE n > ? AND n <= ? ORDER BY n", position.snapshotN, position.logN)
      .toArray();
    if (entries.length !== position.logN - position.snapshotN) {
      throw new Error(`the book log holds ${entries.length} entries after its snapshot, ${position.logN - position.snapshotN} were written`);
    }
    for (const entry of entries) {
      const change = JSON.parse(entry.change) as { bids: [string, string][]; asks: [string, string][] };
      for (const side of ["bids", "asks"] as const) {
        for (const [price, quantity] of decode(change[side])) {
          if (quantity === 0n) sides[side].delete(price);
          else sides[side].set(price, quantity);
        }
      }
    }
    return { bids: [...sides.bids], asks: [...sides.asks] };
  }
}
