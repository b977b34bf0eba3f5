/**
 * A market's book history (docs/history.md#book-history): the closed segments of its book log —
 * the book at a sequence and every batch after it — each one R2 object, with a row a segment
 * here saying what it covers. A segment's text is kept here from the transaction that closes it
 * until R2 has it, so an acknowledged update is never only in memory: in parts of 1 MB, as a
 * segment is about 1 MB and more when its last batch is big.
 */
import { gunzipText, gzipText } from "../core/encoding";
import { type BookEntry, type BookSegment, closedSegment, decodeBase, decodeEntry } from "../writes/book-entries";
import type { ClosedSegment, SegmentSpan } from "../writes/open-segments";
import type { BookTarget } from "./book-replay";
import { type BlockIndex, type BlockText, encodeIndex, segmentBlocks } from "./segment-blocks";
import { yieldTurn } from "./sliced-put";

/** What one kept segment covers. */
export interface SegmentRow extends SegmentSpan {
  bytes: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS book_segments (
  base_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, first_time INTEGER NOT NULL, last_time INTEGER NOT NULL,
  bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS book_segments_by_time ON book_segments (first_time);
CREATE TABLE IF NOT EXISTS book_segment_text (base_seq INTEGER NOT NULL, part INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (base_seq, part));
`;

/** Characters of a segment's text in one row while it waits for R2 (ASCII JSON: a character is a byte; a SQLite value holds 2 MB). */
const PART_CHARS = 1_000_000;

/**
 * `book-history/BTCUSDT/0000000000001234.jsonl.gz`: a segment, named by the sequence of its base —
 * its blocks, a JSON line each, gzipped apart: one gzip file of several members, which `gunzip`
 * reads whole as JSON Lines and a reader reads a block of by its range (`segment-blocks.ts`).
 */
export function segmentKey(symbol: string, baseSeq: number): string {
  return `book-history/${symbol}/${String(baseSeq).padStart(16, "0")}.jsonl.gz`;
}

/**
 * A segment as R2 keeps it: its base and its entries without the batches' fingerprints (the log
 * keeps those to know a resend; history never reads them, and at a few level changes a batch they
 * were about a third of a segment's gzipped bytes).
 */
export function encodeSegment(segment: BookSegment): string {
  return closedSegment(segment).text;
}

/** A segment's JSON, parsed but not decoded. */
const parseSegment = (text: string) => JSON.parse(text) as { base: Parameters<typeof decodeBase>[0]; entries: Parameters<typeof decodeEntry>[0][] };

export function decodeSegment(text: string): BookSegment {
  const value = parseSegment(text);
  return { base: decodeBase(value.base), entries: value.entries.map(decodeEntry) };
}

/** Entries of a segment decoded a turn (about 10 ms of a busy market's: JSON and bigints); a 1 MB segment in one turn held the host's thread ~75 ms. */
const DECODE_SLICE = 128;

/** A segment's entries decoded DECODE_SLICE a turn, the host's other work running between: its open segment's log lines, or a kept segment's parsed entries. */
export async function decodeEntriesInSlices<T>(items: readonly T[], decode: (item: T) => BookEntry): Promise<BookEntry[]> {
  const entries: BookEntry[] = [];
  for (let at = 0; at < items.length; at += DECODE_SLICE) {
    await yieldTurn();
    for (const item of items.slice(at, at + DECODE_SLICE)) entries.push(decode(item));
  }
  return entries;
}

/** `decodeSegment` a slice of entries a turn. */
async function decodeSegmentInSlices(text: string): Promise<BookSegment> {
  const value = parseSegment(text);
  return { base: decodeBase(value.base), entries: await decodeEntriesInSlices(value.entries, decodeEntry) };
}

/** A block's bytes gunzipped and decoded: a segment of its own (its checkpoint and its batches). */
export async function decodeBlock(bytes: ArrayBuffer | Uint8Array): Promise<BookSegment> {
  return decodeSegment(await gunzipText(new Blob([bytes]).stream()));
}

/** A segment read back whole from R2 (the host's reads, and the Workflow that builds an hour's files): its blocks joined. */
export async function readSegment(bucket: R2Bucket, symbol: string, baseSeq: number): Promise<BookSegment> {
  const object = await bucket.get(segmentKey(symbol, baseSeq));
  if (!object) throw new Error(`the book segment at ${baseSeq} of ${symbol} is not in R2`);
  const bytes = new Uint8Array(await object.arrayBuffer());
  const offsets = object.customMetadata?.offsets;
  if (!offsets) throw new Error(`the book segment at ${baseSeq} of ${symbol} says not where its blocks start`);
  const starts = offsets.split(",").map(Number);
  let segment: BookSegment | undefined;
  for (const [i, start] of starts.entries()) {
    const part = await decodeBlock(bytes.subarray(start, starts[i + 1] ?? bytes.length));
    if (segment) segment.entries.push(...part.entries);
    else segment = part;
  }
  return segment!;
}

/** A segment's blocks gzipped apart and laid end to end, with where each lies. */
async function packBlocks(text: string): Promise<{ bytes: Uint8Array; index: BlockIndex[] }> {
  const blocks: BlockText[] = [];
  const gzipped: Uint8Array[] = [];
  for (const block of segmentBlocks(text)) {
    blocks.push(block);
    // A turn a block, cut and gzipped: the host's commits go between.
    gzipped.push(new Uint8Array(await gzipText(block.text)));
    await yieldTurn();
  }
  const bytes = new Uint8Array(gzipped.reduce((sum, part) => sum + part.length, 0));
  const index: BlockIndex[] = [];
  let offset = 0;
  for (const [i, part] of gzipped.entries()) {
    bytes.set(part, offset);
    index.push({ offset, bytes: part.length, baseSeq: blocks[i]!.baseSeq, baseTime: blocks[i]!.baseTime });
    offset += part.length;
  }
  return { bytes, index };
}

type Row = { base_seq: number; last_seq: number; first_time: number; last_time: number; bytes: number };
const toRow = (r: Row): SegmentRow => ({ baseSeq: r.base_seq, lastSeq: r.last_seq, firstTime: r.first_time, lastTime: r.last_time, bytes: r.bytes });
const COLUMNS = "base_seq, last_seq, first_time, last_time, bytes";

export class BookHistory {
  constructor(
    private readonly sql: SqlStorage,
    private readonly bucket: R2Bucket,
    /** Where closed segments are published for the edge's reads (`closed-book-reads.ts`). */
    private readonly db: D1Database,
  ) {
    sql.exec(SCHEMA);
  }

  /**
   * Keeps a closed segment (in the caller's transaction): its row and time index, and its text in
   * a part or more until R2 has it — five rows written in all for a segment of SNAPSHOT_EVERY
   * batches, with the part's delete.
   */
  keep({ baseSeq, lastSeq, firstTime, lastTime, text }: ClosedSegment): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO book_segments (base_seq, last_seq, first_time, last_time, bytes) VALUES (?, ?, ?, ?, ?)",
      baseSeq,
      lastSeq,
      firstTime,
      lastTime,
      text.length,
    );
    for (let part = 0; part * PART_CHARS < text.length; part++) {
      this.sql.exec(
        "INSERT OR REPLACE INTO book_segment_text (base_seq, part, text) VALUES (?, ?, ?)",
        baseSeq,
        part,
        text.slice(part * PART_CHARS, (part + 1) * PART_CHARS),
      );
    }
  }

  /** Whether a kept segment waits for R2. */
  get pending(): boolean {
    return this.sql.exec("SELECT 1 FROM book_segment_text LIMIT 1").toArray().length > 0;
  }

  /** A waiting segment's text, or undefined once R2 has it. */
  private waiting(baseSeq: number): string | undefined {
    const parts = this.sql.exec<{ text: string }>("SELECT text FROM book_segment_text WHERE base_seq = ? ORDER BY part", baseSeq).toArray();
    return parts.length > 0 ? parts.map((p) => p.text).join("") : undefined;
  }

  /**
   * Puts the segments that wait into R2, oldest first, as checkpointed blocks (`segment-blocks.ts`),
   * publishes each one's index row in D1 for the edge's reads, and lets its text go from here;
   * returns how many. A fault leaves the text, and the next upload puts it again (the same bytes).
   */
  async upload(symbol: string): Promise<number> {
    let uploaded = 0;
    // Until none waits: a segment closed while one was being put goes in the same run.
    for (;;) {
      const next = this.sql.exec<Row>(`SELECT ${COLUMNS} FROM book_segments WHERE base_seq = (SELECT MIN(base_seq) FROM book_segment_text)`).toArray()[0];
      if (!next) return uploaded;
      const text = this.waiting(next.base_seq)!;
      // Gzipped a block at a time: about 5 to 6 bytes a level change, checkpoints included, where the JSON holds 21 (docs/history.md#book-history).
      const { bytes, index } = await packBlocks(text);
      const blocks = encodeIndex(index);
      // The object says where its blocks start (a reader of it whole: the Workflow); its row, what each holds too.
      await this.bucket.put(segmentKey(symbol, next.base_seq), bytes, {
        httpMetadata: { contentType: "application/gzip" },
        customMetadata: { offsets: index.map((block) => block.offset).join(",") },
      });
      await this.db
        .prepare("INSERT OR REPLACE INTO book_segments (symbol, base_seq, last_seq, first_time, last_time, bytes, blocks) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .bind(symbol, next.base_seq, next.last_seq, next.first_time, next.last_time, bytes.length, blocks)
        .run();
      this.sql.exec("DELETE FROM book_segment_text WHERE base_seq = ?", next.base_seq);
      uploaded += 1;
    }
  }

  /** The kept segment holding the target (the last one starting at or before it), if any. */
  find(target: BookTarget): SegmentRow | undefined {
    const row =
      "sequence" in target
        ? this.sql.exec<Row>(`SELECT ${COLUMNS} FROM book_segments WHERE base_seq <= ? ORDER BY base_seq DESC LIMIT 1`, target.sequence).toArray()[0]
        : this.sql
            .exec<Row>(`SELECT ${COLUMNS} FROM book_segments WHERE first_time <= ? ORDER BY first_time DESC, base_seq DESC LIMIT 1`, target.time)
            .toArray()[0];
    return row && toRow(row);
  }

  /** The oldest kept segment: where the history begins. */
  first(): SegmentRow | undefined {
    const row = this.sql.exec<Row>(`SELECT ${COLUMNS} FROM book_segments ORDER BY base_seq LIMIT 1`).toArray()[0];
    return row && toRow(row);
  }

  /** The kept segments with batches in [from, to), in order. */
  between(from: number, to: number): SegmentRow[] {
    return this.sql.exec<Row>(`SELECT ${COLUMNS} FROM book_segments WHERE first_time < ? AND last_time >= ? ORDER BY base_seq`, to, from).toArray().map(toRow);
  }

  /** A kept segment read back: from its row while it waits for R2, else from R2. */
  async read(symbol: string, row: SegmentRow): Promise<BookSegment> {
    const waiting = this.waiting(row.baseSeq);
    if (waiting !== undefined) return decodeSegmentInSlices(waiting);
    return readSegment(this.bucket, symbol, row.baseSeq);
  }
}
