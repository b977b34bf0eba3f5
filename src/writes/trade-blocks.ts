import { BoundedMap, isolateCaches } from "../core/bounded-map";
import type { StoredTrade, TradePage } from "../domain/trades";

// No index on the times: a block is a few minutes of trades (a snapshot of the log apart), so a
// market holds a few hundred at most, and an index entry was a row written with each and another
// deleted at the archive. The times are read before the trades in each row (local, never the text).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS trade_blocks (
  first_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, min_time INTEGER NOT NULL, max_time INTEGER NOT NULL,
  trades TEXT NOT NULL, applied_at INTEGER NOT NULL);
`;

/** A trade as a block holds it: [id, seq, price, quantity, side (1 buy, 0 sell), time]. */
export type PackedTrade = [string, number, string, string, 0 | 1, number];

/**
 * The open block is written once it holds this much, and before a commit's trades would take it
 * past (a row is at most 2 MB on Cloudflare; a commit's trades are at most COMMIT_MAX_BYTES): a
 * block's row is never more than this.
 */
const OPEN_BLOCK_MAX_BYTES = 1_200_000;

/** Plain ids (printable ASCII, nothing JSON escapes) are counted by their length; others by their escaped UTF-8 bytes. */
const PLAIN_ID = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;

/** The UTF-8 bytes of an id written as JSON text, its quotes included (an escaped character counts as its escape). */
export function idTextBytes(id: string): number {
  return PLAIN_ID.test(id) ? id.length + 2 : new TextEncoder().encode(JSON.stringify(id)).length;
}

/**
 * At most the bytes a trade takes in a block's row and, escaped once more, in a journal row (its
 * id may be escaped twice): what the blocks' and the commits' bounds count. `seq` unknown (a batch
 * not yet applied) counts as 16 digits.
 */
export function tradeBytes(t: { id: string; seq?: number; price: bigint; quantity: bigint; time: number }): number {
  const id = PLAIN_ID.test(t.id) ? t.id.length : 2 * idTextBytes(t.id);
  const seq = t.seq === undefined ? 16 : String(t.seq).length;
  // Six quotes, escaped in the journal (12), five commas, two brackets, the side, the comma between trades.
  return id + seq + t.price.toString().length + t.quantity.toString().length + String(t.time).length + 21;
}

export const pack = (t: StoredTrade): PackedTrade => [t.id, t.seq, t.price.toString(), t.quantity.toString(), t.side === "buy" ? 1 : 0, t.time];
export const unpack = ([id, seq, price, quantity, buy, time]: PackedTrade): StoredTrade => ({
  id,
  seq,
  price: BigInt(price),
  quantity: BigInt(quantity),
  side: buy === 1 ? "buy" : "sell",
  time,
});

/**
 * A block's text (`JSON.stringify` of its packed trades) read a piece of whole trades at a time,
 * each about `bytes` long, so a reader of a 1.2 MB block holds its thread for one piece's parse,
 * not the block's. A piece is cut where `],["` begins the next trade; the same four characters can
 * end a trade's id (`"x],["`), but a cut there leaves that id's string open, so its parse fails and
 * the cut moves on to the next: every cut is between two trades, and the pieces together are the
 * block's trades in order. An id holds at most one such false cut (its only unescaped quote is
 * its last), so a piece is parsed at most twice whatever the ids.
 *
 * @example
 * for (const trades of blockPieces(text, 64 * 1024)) rows.push(...trades);
 */
export function* blockPieces(text: string, bytes: number): Generator<PackedTrade[]> {
  let start = 1;
  let from = start + bytes;
  while (start < text.length - 1) {
    const cut = text.indexOf('],["', from);
    if (cut === -1) {
      yield JSON.parse(`[${text.slice(start)}`) as PackedTrade[];
      return;
    }
    let trades: PackedTrade[];
    try {
      trades = JSON.parse(`[${text.slice(start, cut + 1)}]`) as PackedTrade[];
    } catch {
      from = cut + 1;
      continue;
    }
    yield trades;
    start = cut + 2;
    from = start + bytes;
  }
}

interface BlockRow {
  first_seq: number;
  last_seq: number;
  min_time: number;
  max_time: number;
  trades: string;
}

const tradesOf = (row: Record<string, SqlStorageValue>) => (JSON.parse((row as unknown as BlockRow).trades) as PackedTrade[]).map(unpack);

/**
 * Blocks kept parsed for the pages after (a page of 1,000 from the middle of a block of up to 1.2
 * MB, and the next from the same block), for every market of the isolate together: 8 MiB, a parsed
 * trade held at about three times its text.
 */
const parsedBlocks = new BoundedMap<PackedTrade[]>(8 * 1024 * 1024, 64, (key, trades) => 2 * key.length + 150 * trades.length, isolateCaches);
/** Tells the markets' blocks apart in `parsedBlocks`. */
let stores = 0;

/**
 * A market's hot trades, in blocks (docs/design.md#the-write-path): the trades of about a minute
 * are one row and one index entry, where a row per trade and three index entries were written
 * before. Until its minute is written, the open block is held here in memory — its trades are
 * durable in the book log's commit rows, from which `restoreOpen` brings them back after a
 * restart — and every read sees it as the newest block. Blocks are keyed by their first trade id
 * (`seq`) and indexed by their latest trade time; every read parses the blocks its bounds reach
 * and filters their trades, so answers are the same as a row per trade gave (pages keep the
 * blocks they parsed, 8 MiB an isolate, and make only the trades they answer).
 */
export class TradeBlocks {
  /** The trades not yet in a row (ascending `seq`, all above every stored block's), and when the last came. */
  private open: StoredTrade[] = [];
  /** This market's blocks in `parsedBlocks`. */
  private readonly store = ++stores;
  private openAt = 0;
  private openBytes = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }

  /**
   * A commit's accepted trades, in the order they were applied (ascending `seq`), and when: into
   * the open block — written first (inside the caller's transaction) if they would take it past its bound.
   */
  append(trades: readonly StoredTrade[], appliedAt = 0): void {
    const bytes = trades.reduce((sum, trade) => sum + tradeBytes(trade), 0);
    if (this.openBytes > 0 && this.openBytes + bytes > OPEN_BLOCK_MAX_BYTES) this.seal();
    this.add(trades, appliedAt, bytes);
  }

  private add(trades: readonly StoredTrade[], appliedAt: number, bytes: number): void {
    if (trades.length === 0) return;
    this.open.push(...trades);
    this.openAt = appliedAt;
    this.openBytes += bytes;
  }

  /** Whether the open block is due to be written before the minute (its size). */
  get openFull(): boolean {
    return this.openBytes >= OPEN_BLOCK_MAX_BYTES;
  }

  /** Writes the open block as one row (inside the caller's transaction); nothing when it is empty. */
  seal(): void {
    if (this.open.length === 0) return;
    this.write(this.open, this.openAt);
    this.open = [];
    this.openBytes = 0;
  }

  /** After a restart: the trades the log's commit rows hold beyond the newest stored block are the open block again. */
  restoreOpen(commits: readonly { trades: readonly StoredTrade[]; at: number }[]): void {
    this.open = [];
    this.openBytes = 0;
    const stored = this.storedNewest()?.lastSeq ?? 0;
    // As they were before the restart: they fitted (a block is written before it would pass its bound).
    for (const { trades, at } of commits) {
      const open = trades.filter((t) => t.seq > stored);
      this.add(
        open,
        at,
        open.reduce((sum, trade) => sum + tradeBytes(trade), 0),
      );
    }
  }

  private write(trades: readonly StoredTrade[], appliedAt: number): void {
    this.sql.exec(
      "INSERT INTO trade_blocks (first_seq, last_seq, min_time, max_time, trades, applied_at) VALUES (?, ?, ?, ?, ?, ?)",
      trades[0]!.seq,
      trades[trades.length - 1]!.seq,
      Math.min(...trades.map((t) => t.time)),
      Math.max(...trades.map((t) => t.time)),
      JSON.stringify(trades.map(pack)),
      appliedAt,
    );
  }

  /** The newest trade id and when it was applied (the open block's, else the newest row's): the market's record is brought up to it on load. */
  newest(): { lastSeq: number; appliedAt: number } | undefined {
    const last = this.open[this.open.length - 1];
    return last ? { lastSeq: last.seq, appliedAt: this.openAt } : this.storedNewest();
  }

  private storedNewest(): { lastSeq: number; appliedAt: number } | undefined {
    const row = this.sql
      .exec<{ last_seq: number; applied_at: number }>("SELECT last_seq, applied_at FROM trade_blocks ORDER BY first_seq DESC LIMIT 1")
      .toArray()[0];
    return row && { lastSeq: row.last_seq, appliedAt: row.applied_at };
  }

  /** The trades with `seq` in `from`…`to`, ascending. */
  between(from: number, to: number): StoredTrade[] {
    const out: StoredTrade[] = [];
    for (const row of this.sql.exec("SELECT trades FROM trade_blocks WHERE last_seq >= ? AND first_seq <= ? ORDER BY first_seq", from, to)) {
      for (const trade of tradesOf(row)) if (trade.seq >= from && trade.seq <= to) out.push(trade);
    }
    for (const trade of this.open) if (trade.seq >= from && trade.seq <= to) out.push(trade);
    return out;
  }

  /** The lowest stored trade id above `seq`, or null. */
  firstAfter(seq: number): number | null {
    const row = this.sql
      .exec<{ first_seq: number; last_seq: number }>("SELECT first_seq, last_seq FROM trade_blocks WHERE last_seq > ? ORDER BY first_seq LIMIT 1", seq)
      .toArray()[0];
    if (row) return Math.max(row.first_seq, seq + 1);
    return this.open.find((t) => t.seq > seq)?.seq ?? null;
  }

  /** The latest trade time among trades `from`…`to` (null: none): read from whole blocks, so it may be a little later, never earlier. */
  latestTimeBetween(from: number, to: number): number | null {
    let time = this.sql
      .exec<{ time: number | null }>("SELECT MAX(max_time) AS time FROM trade_blocks WHERE last_seq >= ? AND first_seq <= ?", from, to)
      .one().time;
    for (const trade of this.open) if (trade.seq >= from && trade.seq <= to && (time === null || trade.time > time)) time = trade.time;
    return time;
  }

  /**
   * Whole blocks as stored, their text not parsed, for a reader off the host (the daily files'
   * Workflow): the blocks that may hold trades `from`…`to` of `startTime`…`endTime`, in order,
   * until they pass `maxBytes`; then, once every sealed block is read, the open block's trades
   * those bounds admit. `through`: the last trade id the answer covers. The reader filters.
   */
  rawBlocks(from: number, to: number, startTime: number, endTime: number, maxBytes: number): { texts: string[]; open: PackedTrade[]; through: number } {
    const texts: string[] = [];
    let bytes = 0;
    const rows = this.sql.exec<{ last_seq: number; trades: string }>(
      "SELECT last_seq, trades FROM trade_blocks WHERE last_seq >= ? AND first_seq <= ? AND max_time >= ? AND min_time <= ? ORDER BY first_seq",
      from,
      to,
      startTime,
      endTime,
    );
    for (const row of rows) {
      texts.push(row.trades);
      bytes += row.trades.length;
      if (bytes >= maxBytes) return { texts, open: [], through: Math.min(row.last_seq, to) };
    }
    const open = this.open.filter((t) => t.seq >= from && t.seq <= to && t.time >= startTime && t.time <= endTime).map(pack);
    return { texts, open, through: to };
  }

  /**
   * One page of trades (the bounds that are set, and `seq > after`), in `seq` order: forwards the
   * first `limit`, else the last `limit` (answered ascending). The same rule a row per trade answered.
   */
  page(page: TradePage, after: number, forwards: boolean): StoredTrade[] {
    const lowest = Math.max(after + 1, page.fromId ?? 0);
    const highest = page.before === undefined ? Number.MAX_SAFE_INTEGER : page.before - 1;
    const admitted = (seq: number, time: number) =>
      seq >= lowest && seq <= highest && (page.startTime === undefined || time >= page.startTime) && (page.endTime === undefined || time <= page.endTime);
    const cursor = this.sql.exec(
      `SELECT first_seq, last_seq, trades FROM trade_blocks WHERE last_seq >= ? AND first_seq <= ? AND max_time >= ? AND min_time <= ? ORDER BY first_seq ${forwards ? "ASC" : "DESC"}`,
      lowest,
      highest,
      page.startTime ?? 0,
      page.endTime ?? Number.MAX_SAFE_INTEGER,
    );
    const out: StoredTrade[] = [];
    // The open block is the newest: first when paging backwards, last forwards.
    const open = this.open.filter((t) => admitted(t.seq, t.time));
    // A stored block's trades are checked packed and unpacked only as the page takes them.
    const admitsPacked = (t: PackedTrade) => admitted(t[1], t[5]);
    const parsed = (row: Record<string, SqlStorageValue>) => this.parsed(row as unknown as BlockRow);
    const blocks = (function* (): Generator<readonly (StoredTrade | PackedTrade)[]> {
      if (!forwards) yield open.reverse();
      for (const row of cursor) {
        const trades = parsed(row).filter(admitsPacked);
        yield forwards ? trades : trades.reverse();
      }
      if (forwards) yield open;
    })();
    for (const trades of blocks) {
      for (const trade of trades) {
        out.push(Array.isArray(trade) ? unpack(trade) : trade);
        if (out.length >= page.limit) return forwards ? out : out.reverse();
      }
    }
    return forwards ? out : out.reverse();
  }

  /** A stored block's packed trades, parsed once for the pages that read it one after another (`parsedBlocks`). */
  private parsed(row: BlockRow): PackedTrade[] {
    const key = `${this.store}:${row.first_seq}:${row.last_seq}:${row.trades.length}`;
    const held = parsedBlocks.get(key);
    if (held) return held;
    const trades = JSON.parse(row.trades) as PackedTrade[];
    parsedBlocks.set(key, trades);
    return trades;
  }

  /** The newest `limit` trades by time (ties: later arrival first). */
  latest(limit: number): StoredTrade[] {
    const found: StoredTrade[] = [...this.open];
    const newestFirst = (a: StoredTrade, b: StoredTrade) => b.time - a.time || b.seq - a.seq;
    const blocks = this.sql.exec<{ first_seq: number; max_time: number }>("SELECT first_seq, max_time FROM trade_blocks ORDER BY max_time DESC").toArray();
    for (const block of blocks) {
      // Blocks come latest-trade first: once `limit` trades are later than everything a block holds, it and the rest add nothing.
      if (found.length >= limit) {
        found.sort(newestFirst);
        if (found[limit - 1]!.time > block.max_time) break;
      }
      found.push(...tradesOf(this.sql.exec("SELECT trades FROM trade_blocks WHERE first_seq = ?", block.first_seq).one()));
    }
    return found.sort(newestFirst).slice(0, limit);
  }

  /**
   * Lets the trades up to `seq` go (they are archived) except the newest `keep`, which the
   * latest-trades answer reads. A block of about a minute may straddle that line: it is written
   * again without the trades that go (two rows and their index entries, once per archived chunk).
   */
  dropThrough(seq: number, newestSeq: number, keep: number): void {
    const line = Math.min(seq, newestSeq - keep);
    this.sql.exec("DELETE FROM trade_blocks WHERE last_seq <= ?", line);
    const straddling = this.sql.exec("SELECT first_seq, trades, applied_at FROM trade_blocks WHERE first_seq <= ? AND last_seq > ?", line, line).toArray();
    for (const row of straddling) {
      this.sql.exec("DELETE FROM trade_blocks WHERE first_seq = ?", row.first_seq);
      this.write(
        tradesOf(row).filter((t) => t.seq > line),
        row.applied_at as number,
      );
    }
  }
}
