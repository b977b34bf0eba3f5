/**
 * Closed book history read where it lies (docs/history.md#closed-history): the isolate or stream
 * shard that was asked finds the closed segment in D1 (the row its host published with the
 * upload), reads the one block holding the target by an R2 range (or from the location's cache,
 * under the object's immutable name), and replays at most BLOCK_ENTRIES batches from the block's
 * checkpoint. The market's host is not called: it is asked only for what is still open, or not
 * yet published — the caller's fallback when this answers undefined.
 *
 * Bounded per isolate: the segment rows it has looked up (ROWS_MAX a market), the blocks it has
 * decoded (BLOCKS_MAX_BYTES), their messages made for pages (BLOCK_PAGES_MAX_BYTES) and the books
 * its pages ended at (PAGE_BOOKS_MAX_BYTES), least recently used out first.
 */
import { BoundedMap, isolateCaches } from "../core/bounded-map";
import type { MarketConfig } from "../domain/market-config";
import type { OrderBook } from "../domain/order-book";
import { logFailure } from "../logs/log";
import { billed } from "../metrics/billed-bindings";
import { isolateMetrics } from "../metrics/holder";
import type { BookSegment } from "../writes/book-entries";
import type { SegmentSpan } from "../writes/open-segments";
import { type BlockMessages, blockMessages, pageOf } from "./block-messages";
import { decodeBlock, segmentKey } from "./book-history";
import { type BookTarget, bookOf, historicalBook, type ReplayLimits, type ReplayPage, replayTo, segmentPage } from "./book-replay";
import { bookBytes, segmentBytes } from "./history-cache";
import { type BlockIndex, blockFor, decodeIndex } from "./segment-blocks";

/** Where a closed read found its block: decoded in this isolate, in the location's cache, or read from R2 by range. */
type ClosedSource = "memory" | "cache" | "r2";

/** What a closed read needs of where it runs. */
export interface ClosedHistory {
  db: D1Database;
  bucket: R2Bucket;
  /** Counts each read by where its block came from (`mds_history_closed_reads_total`). */
  counted: (source: ClosedSource) => void;
  /** Lets the cache's put finish after the answer (a request's); without it the put is awaited. */
  waitUntil?: (promise: Promise<unknown>) => void;
}

/**
 * The closed history of `env`, counted in the isolate's metrics (a stream shard counts in its
 * own: `counted`).
 *
 * @example
 * const page = await closedReplayPage(closedHistoryOf(env), market, from, to, after);
 */
export function closedHistoryOf(
  env: Env,
  counted: ClosedHistory["counted"] = (source) => isolateMetrics.counts.add("mds_history_closed_reads_total", { source }),
  waitUntil?: ClosedHistory["waitUntil"],
): ClosedHistory {
  return { db: env.DB, bucket: billed(env, "HISTORY"), counted, ...(waitUntil ? { waitUntil } : {}) };
}

/** A published segment: what it covers and where its blocks lie. */
interface SegmentRow extends SegmentSpan {
  blocks: BlockIndex[];
}

/** Segment rows a market this isolate keeps (a backtest walks a few hours: a few dozen segments). */
const ROWS_MAX = 256;
/** Decoded blocks this isolate keeps, in bytes (estimated as the host's history cache does). */
const BLOCKS_MAX_BYTES = 16 * 1024 * 1024;
const PAGE_BOOKS_MAX_BYTES = 8 * 1024 * 1024;
const BLOCK_PAGES_MAX_BYTES = 12 * 1024 * 1024;

/** About what a row holds in memory: its numbers and its blocks' (up to MAX_BLOCKS of them). */
const rowBytes = (row: SegmentRow) => 80 + 56 * row.blocks.length;
const rows = new BoundedMap<SegmentRow[]>(
  4 * 1024 * 1024,
  4_096,
  (key, list) => 2 * key.length + list.reduce((sum, row) => sum + rowBytes(row), 0),
  isolateCaches,
);
const blocks = new BoundedMap<BookSegment>(BLOCKS_MAX_BYTES, 1_024, (_key, segment) => segmentBytes(segment), isolateCaches);
/** Blocks' messages made once (`block-messages.ts`), for the pages after a cursor: about 4 bytes held a byte of their text. */
const blockPages = new BoundedMap<BlockMessages>(BLOCK_PAGES_MAX_BYTES, 1_024, (_key, made) => made.held, isolateCaches);
/** Books where a page ended inside a block, for the page after (a catch-up's or replay's), in bytes as the host's history cache counts them. */
const pageBooks = new BoundedMap<OrderBook>(PAGE_BOOKS_MAX_BYTES, 256, (_key, book) => bookBytes(book), isolateCaches);

/** What a closed read may answer: a book (at or before its segment's end), or a page (something after the cursor in the segment). */
type Use = "book" | "page";

function holds(row: SegmentRow, target: BookTarget, use: Use): boolean {
  if ("time" in target) return row.firstTime <= target.time && target.time < row.lastTime;
  return row.baseSeq <= target.sequence && (use === "book" ? target.sequence <= row.lastSeq : target.sequence < row.lastSeq);
}

const SEGMENT_QUERY = "SELECT base_seq, last_seq, first_time, last_time, bytes, blocks FROM book_segments WHERE symbol = ? AND";
type Row = { base_seq: number; last_seq: number; first_time: number; last_time: number; bytes: number; blocks: string };

/** The published segment that holds the target, from this isolate's rows or one D1 query (an index seek: a row or two read). */
async function segmentFor(history: ClosedHistory, symbol: string, target: BookTarget, use: Use): Promise<SegmentRow | undefined> {
  const known = rows.get(symbol) ?? [];
  const held = known.find((row) => holds(row, target, use));
  if (held) return held;
  // The last segment starting at or before the target: by its base sequence, or by its first time.
  const query =
    "sequence" in target
      ? history.db.prepare(`${SEGMENT_QUERY} base_seq <= ? ORDER BY base_seq DESC LIMIT 1`).bind(symbol, target.sequence)
      : history.db.prepare(`${SEGMENT_QUERY} first_time <= ? ORDER BY first_time DESC, base_seq DESC LIMIT 1`).bind(symbol, target.time);
  const found = await query.first<Row>();
  if (!found) return undefined;
  const row: SegmentRow = {
    baseSeq: found.base_seq,
    lastSeq: found.last_seq,
    firstTime: found.first_time,
    lastTime: found.last_time,
    blocks: decodeIndex(found.blocks, found.bytes),
  };
  if (!known.some((k) => k.baseSeq === row.baseSeq)) rows.set(symbol, [...known, row].slice(-ROWS_MAX));
  return holds(row, target, use) ? row : undefined;
}

/** A block decoded: this isolate's, else its bytes from the location's cache, else one R2 range read (and into the cache). */
async function blockOf(history: ClosedHistory, symbol: string, row: SegmentRow, block: BlockIndex, name: string): Promise<BookSegment> {
  const decoded = blocks.get(name);
  if (decoded) {
    history.counted("memory");
    return decoded;
  }
  const key = segmentKey(symbol, row.baseSeq);
  // Immutable: the object's name, its last batch's time and the block's place in it say what it holds.
  const url = `https://book-history.internal/${key}/${row.lastTime}/${block.offset}-${block.bytes}`;
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  const hit = await cache?.match(url).catch(() => undefined);
  let bytes: ArrayBuffer;
  if (hit) {
    history.counted("cache");
    bytes = await hit.arrayBuffer();
  } else {
    const object = await history.bucket.get(key, { range: { offset: block.offset, length: block.bytes } });
    if (!object) throw new Error(`the book segment at ${row.baseSeq} of ${symbol} is not in R2`);
    history.counted("r2");
    bytes = await object.arrayBuffer();
    const put = cache?.put(url, new Response(bytes.slice(0), { headers: { "Cache-Control": "public, max-age=31536000, immutable" } })).catch(() => {});
    if (put && history.waitUntil) history.waitUntil(put);
    else if (put) await put;
  }
  const segment = await decodeBlock(bytes);
  blocks.set(name, segment);
  return segment;
}

/** Where a closed read failed: logged, and the host answers. */
function failed(error: unknown, symbol: string): undefined {
  logFailure("closed history read failed; the host answers", { error, symbol });
  return undefined;
}

/**
 * The block holding the target in a published segment — its name, and how to read it (undefined
 * when it cannot be: R2 failing) — or undefined (not closed, not yet published, or D1 failing: the
 * host answers). Named before it is read, so a page of messages already made reads nothing.
 */
async function closedBlock(
  history: ClosedHistory,
  symbol: string,
  target: BookTarget,
  use: Use,
): Promise<{ name: string; read: () => Promise<BookSegment | undefined> } | undefined> {
  try {
    const row = await segmentFor(history, symbol, target, use);
    if (!row) return undefined;
    const index = blockFor(row.blocks, target);
    const name = `${segmentKey(symbol, row.baseSeq)}|${index.offset}`;
    return { name, read: () => blockOf(history, symbol, row, index, name).catch((error: unknown) => failed(error, symbol)) };
  } catch (error) {
    return failed(error, symbol);
  }
}

/** The book at a target in closed history, as `GET /api/orderbook?sequence=|at=` answers it; undefined when the host must answer. */
export async function closedBookAt(
  history: ClosedHistory,
  market: MarketConfig,
  target: BookTarget,
  depth: number,
): Promise<{ text: string; sequence: number } | undefined> {
  const block = await (await closedBlock(history, market.symbol, target, "book"))?.read();
  if (!block) return undefined;
  const book = bookOf(block, market.priceScale, market.quantityScale);
  replayTo(book, block, target);
  return { text: JSON.stringify(historicalBook(market.symbol, book, depth)), sequence: book.sequence };
}

/**
 * A replay's or catch-up's page in closed history (`MarketBookHistory.replayPage`'s answer): from
 * `from` (the first, opening with the whole book) or after the cursor, to the end of one block;
 * undefined when the host must answer.
 */
export async function closedReplayPage(
  history: ClosedHistory,
  market: MarketConfig,
  from: number,
  to: number,
  after: number | undefined,
  limits: ReplayLimits = {},
): Promise<ReplayPage | undefined> {
  const target: BookTarget = after === undefined ? { time: from } : { sequence: after };
  const found = await closedBlock(history, market.symbol, target, "page");
  if (!found) return undefined;
  const bounds = { to, toSequence: limits.toSequence ?? Number.MAX_SAFE_INTEGER, maxBytes: limits.maxBytes };
  let block: BookSegment | undefined;
  // After a cursor at a window's end (every page's but a replay's first), a slice of the block's
  // messages made once: when they are held, the block is not read again.
  if (after !== undefined) {
    let made = blockPages.get(found.name);
    if (made) history.counted("memory");
    else {
      block = await found.read();
      if (!block) return undefined;
      made = blockMessages(block, market);
      blockPages.set(found.name, made);
    }
    const sliced = pageOf(made, after, bounds);
    if (sliced) return { messages: sliced.messages, next: sliced.messages.at(-1)!.sequence };
  }
  block ??= await found.read();
  if (!block) return undefined;
  const page = segmentPage(block, market, from, after, bounds, pageBooks, market.symbol);
  // The block read to its end within bounds: the next page is the next block's (or the host's, past the last published).
  return page.end === "passed" ? { messages: page.messages } : { messages: page.messages, next: page.sequence };
}
