/**
 * The ids of a market's trades as they were kept before the minutes of `trade-id-minutes.ts`: read
 * (a resend of a trade taken before is still a duplicate) until their hours expire, never written.
 *
 * One table per hour of receipt (`recent_ids_{hour}`, the id as its key with the trade's `seq`, no
 * other index): an id is written once, when its trade is taken, and the whole hour is dropped when
 * its youngest id is 26 hours old and all its trades are archived, so expiry writes no row per id.
 * An expired hour whose trades are still hot (a quiet market fills a chunk slowly) moves to
 * `recent_ids_old` and leaves it as they are archived: a hot trade stays known. A batch's ids are
 * looked up together: one statement per table (at most 28) and 100 ids. Cost, counted in rows: one
 * row written per trade; up to 28 rows read per new trade; about 40 bytes of storage per id
 * (3.6 GB at 1,000 trades a second for 26 hours, within an object's 10 GB).
 */
import { hourExpired, hourTables } from "./trade-id-minutes";

const OLD = "recent_ids_old";
/** Ids looked up in one statement (SQLite in a Durable Object binds at most 100 values a statement). */
const IDS_PER_STATEMENT = 100;

/** The recent ids of one market object's SQLite: the market store holds one. */
export class RecentTradeIds {
  /** The hours with a table, ascending (read once from the schema). */
  private hours: number[] | undefined;
  /** Whether any id is kept here (read once, and again after a `forget`). */
  private holds: boolean | undefined;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS ${OLD} (id TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID`);
  }

  private tables(): number[] {
    this.hours ??= hourTables(this.sql, "recent_ids_");
    for (const hour of this.hours) {
      // Tables from before the seq column held archived trades only: seq 0.
      const columns = this.sql.exec<{ name: string }>(`PRAGMA table_info(recent_ids_${hour})`).toArray();
      if (!columns.some((c) => c.name === "seq")) this.sql.exec(`ALTER TABLE recent_ids_${hour} ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`);
    }
    return this.hours;
  }

  /**
   * The ids of `ids` that left the hot table within the last RECENT_ID_MS (or a little longer:
   * whole hours). One statement per hour table and 100 ids, not one per id: a batch of 1,000 new
   * trades costs at most 270 statements, not 27,000.
   */
  among(ids: readonly string[]): Set<string> {
    const found = new Set<string>();
    // A market from after the minutes has none: no statement a batch.
    this.holds ??= this.tables().length > 0 || this.sql.exec(`SELECT 1 FROM ${OLD} LIMIT 1`).toArray().length > 0;
    if (!this.holds) return found;
    const tables = [OLD, ...this.tables().map((hour) => `recent_ids_${hour}`)];
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const slice = ids.slice(i, i + IDS_PER_STATEMENT);
      const marks = slice.map(() => "?").join(", ");
      for (const table of tables) {
        for (const row of this.sql.exec<{ id: string }>(`SELECT id FROM ${table} WHERE id IN (${marks})`, ...slice)) found.add(row.id);
      }
    }
    return found;
  }

  /**
   * Drops the hours whose ids are all older than RECENT_ID_MS at `now`; the ids among them of
   * trades not yet archived (`seq` above `archivedThrough`) move to the old table until they are.
   */
  forget(now: number, archivedThrough: number): void {
    const hours = this.tables();
    while (hours.length > 0 && hourExpired(hours[0]!, now)) {
      const table = `recent_ids_${hours.shift()}`;
      this.sql.exec(`INSERT OR IGNORE INTO ${OLD} (id, seq) SELECT id, seq FROM ${table} WHERE seq > ?`, archivedThrough);
      this.sql.exec(`DROP TABLE IF EXISTS ${table}`);
    }
    this.sql.exec(`DELETE FROM ${OLD} WHERE seq <= ?`, archivedThrough);
    this.holds = undefined;
  }
}
