/**
 * The ids of trades that left the hot `trades` table (archived to R2), kept so that a publisher's
 * resend within 25 hours is still recognised as a duplicate, whatever the market's rate
 * (docs/publishing.md#resending). A chunk can be archived young — once 1,000,000 trades follow it,
 * 17 minutes at 1,000 trades a second — so the hot table alone does not cover 25 hours.
 *
 * One table per hour of archiving (`recent_ids_{hour}`, the id as its key, no other index): an id
 * is written once, when its trade is archived, and the whole hour is dropped when its youngest id
 * is 26 hours old, so expiry writes no row per id. A batch's ids are looked up together: one statement per
 * hour table (at most 27) and 100 ids. Cost, counted in rows: one row written per archived trade;
 * up to 27 rows read per new trade on a market that has archived in the last 26 hours; about 40 bytes
 * of storage per id (3.6 GB at 1,000 trades a second for 26 hours, within an object's 10 GB).
 */
import { HOUR_MS } from "../history/intervals";

/** An id is kept at least this long after it was archived (and so after it was received). */
export const RECENT_ID_MS = 25 * HOUR_MS;

/** The hour an id archived at `now` is kept under. */
export function idHour(now: number): number {
  return Math.floor(now / HOUR_MS);
}

/** Whether an hour's ids may be dropped at `now`: its last id was archived ≥ RECENT_ID_MS ago. */
export function hourExpired(hour: number, now: number): boolean {
  return (hour + 1) * HOUR_MS + RECENT_ID_MS <= now;
}

const TABLE = /^recent_ids_(\d+)$/;
/** Ids looked up in one statement (SQLite binds at most a few hundred parameters comfortably). */
const IDS_PER_STATEMENT = 100;

/** The recent ids of one market object's SQLite: the market store holds one. */
export class RecentTradeIds {
  /** The hours with a table, ascending (read once from the schema). */
  private hours: number[] | undefined;

  constructor(private readonly sql: SqlStorage) {}

  private tables(): number[] {
    this.hours ??= this.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'recent_ids_%'")
      .toArray()
      .flatMap((row) => {
        const match = TABLE.exec(row.name);
        return match ? [Number(match[1])] : [];
      })
      .sort((a, b) => a - b);
    return this.hours;
  }

  /** Keeps `ids` (trades leaving the hot table at `now`) for RECENT_ID_MS at least. */
  remember(ids: readonly string[], now: number): void {
    if (ids.length === 0) return;
    const hour = idHour(now);
    const hours = this.tables();
    if (!hours.includes(hour)) {
      this.sql.exec(`CREATE TABLE IF NOT EXISTS recent_ids_${hour} (id TEXT PRIMARY KEY) WITHOUT ROWID`);
      hours.push(hour);
      hours.sort((a, b) => a - b);
    }
    for (const id of ids) this.sql.exec(`INSERT OR IGNORE INTO recent_ids_${hour} (id) VALUES (?)`, id);
  }

  /**
   * The ids of `ids` that left the hot table within the last RECENT_ID_MS (or a little longer:
   * whole hours). One statement per hour table and 100 ids, not one per id: a batch of 1,000 new
   * trades costs at most 270 statements, not 27,000.
   */
  among(ids: readonly string[]): Set<string> {
    const found = new Set<string>();
    const hours = this.tables();
    if (hours.length === 0) return found;
    for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
      const slice = ids.slice(i, i + IDS_PER_STATEMENT);
      const marks = slice.map(() => "?").join(", ");
      for (const hour of hours) {
        for (const row of this.sql.exec<{ id: string }>(`SELECT id FROM recent_ids_${hour} WHERE id IN (${marks})`, ...slice)) found.add(row.id);
      }
    }
    return found;
  }

  /** Drops the hours whose ids are all older than RECENT_ID_MS at `now`. */
  forget(now: number): void {
    const hours = this.tables();
    while (hours.length > 0 && hourExpired(hours[0]!, now)) this.sql.exec(`DROP TABLE IF EXISTS recent_ids_${hours.shift()}`);
  }
}
