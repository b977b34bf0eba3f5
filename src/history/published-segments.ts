/**
 * A span's closed book segments as the hosts publish them in D1 (`book_segments`): how the
 * Workflows that build files from R2 find them again without asking a market's host.
 */

type Row = { base_seq: number; last_seq: number; last_time: number };

/**
 * The base sequences, in order, of the segments holding [from, to): the one open at `from` (its book
 * opens the span; with `opening: "changed"` only when a batch of it falls in the span) and those
 * starting in it. Two index seeks. A gap in their chain (a segment not yet published) throws.
 *
 * @example
 * const segments = await spanSegments(env.DB, "BTCUSDT", day, day + DAY_MS);
 */
export async function spanSegments(db: D1Database, symbol: string, from: number, to: number, opening: "always" | "changed" = "always"): Promise<number[]> {
  const columns = "SELECT base_seq, last_seq, last_time FROM book_segments WHERE symbol = ?";
  const first = await db.prepare(`${columns} AND first_time < ? ORDER BY first_time DESC, base_seq DESC LIMIT 1`).bind(symbol, from).first<Row>();
  const within = await db.prepare(`${columns} AND first_time >= ? AND first_time < ? ORDER BY base_seq`).bind(symbol, from, to).all<Row>();
  const opens = first && (opening === "always" || first.last_time >= from);
  const rows = [...(opens ? [first] : []), ...within.results];
  for (let i = 1; i < rows.length; i++) {
    if (rows[i]!.base_seq !== rows[i - 1]!.last_seq) throw new Error(`${symbol}'s book segment after ${rows[i - 1]!.last_seq} is not published yet`);
  }
  return rows.map((row) => row.base_seq);
}
