/**
 * A closed segment as R2 keeps it (docs/history.md#book-history): blocks, each the whole book at a
 * checkpoint and at most BLOCK_ENTRIES batches after it, gzipped apart and laid end to end in one
 * object. Where a block starts is in the segment's index row, so a reader answers any sequence or
 * moment from one range read and at most BLOCK_ENTRIES batches replayed — never the whole segment.
 * Pure: the host's upload and the edge's reads do the I/O.
 */
import type { StoredChange, TextLevels } from "../writes/book-entries";

/**
 * Batches after a checkpoint, at most: what one answer replays. A busy book's wide batches fill
 * BLOCK_CHARS first (about 256 of 20 level changes); a quiet book's small ones take up to this
 * many, so its checkpoints (the whole book, repeated) stay a tenth of its segment's bytes, not
 * the 42 % that a checkpoint every 256 batches of 5 changes added (bench:cost's segment bytes a
 * level change, 5.25 → 7.48).
 */
export const BLOCK_ENTRIES = 1_024;
/** …or once they hold this many characters of JSON (a busy book's batches are wide). */
const BLOCK_CHARS = 128 * 1024;
/**
 * Blocks a segment holds at most: its 4,096 commits of a market's batches (five a commit at 50 a
 * second: 20 blocks by count) or its 1 MB (9 by bytes). Where they start is R2's metadata of the
 * object (2 KB at most: 128 offsets of 7 digits and a comma are 1 KB); past it, the last block
 * holds the rest.
 */
const MAX_BLOCKS = 128;

/** Where a block lies in its object, and the book it starts from. */
export interface BlockIndex {
  offset: number;
  bytes: number;
  baseSeq: number;
  baseTime: number;
}

type StoredBase = { sequence: number; time: number; bids: TextLevels; asks: TextLevels };

/** A block's text: `{"base":…,"entries":[…]}` and a newline, a segment's own shape, so a block decodes as a segment does. */
export interface BlockText {
  baseSeq: number;
  baseTime: number;
  text: string;
}

/** Decimal integer texts (no sign, no leading zero) in numeric order. */
const byValue = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** The levels of a side in the book's order: bids highest first, asks lowest first. */
function sorted(side: Map<string, string>, descending: boolean): TextLevels {
  const prices = [...side.keys()].sort(byValue);
  if (descending) prices.reverse();
  return prices.map((price) => [price, side.get(price)!]);
}

/**
 * A segment's text (as the host keeps it) cut into blocks: a new block, with the whole book as it
 * stands as its base, every BLOCK_ENTRIES batches or BLOCK_CHARS of them. The book is replayed on
 * the levels' text (no number is parsed: units are canonical decimal text, `"0"` removes a level).
 * A block at a time, so its caller can yield between them: a busy market's 1 MB segment cut in one
 * go held its host's thread 50–70 ms (a 2,000-level book, measured in node).
 */
export function* segmentBlocks(text: string): Generator<BlockText> {
  const { base, entries } = JSON.parse(text) as { base: StoredBase; entries: StoredChange[] };
  const sides = { bids: new Map<string, string>(base.bids), asks: new Map<string, string>(base.asks) };
  let made = 0;
  // The block being made: its base, and its batches' texts.
  let block = { baseSeq: base.sequence, baseTime: base.time, base: JSON.stringify(base) };
  let parts: string[] = [];
  let chars = 0;
  // Where the book stands after the batches replayed so far.
  let sequence = base.sequence;
  let time = base.time;
  for (const entry of entries) {
    const full = parts.length >= BLOCK_ENTRIES || chars >= BLOCK_CHARS;
    if (full && parts.length > 0 && made < MAX_BLOCKS - 1) {
      made += 1;
      yield { baseSeq: block.baseSeq, baseTime: block.baseTime, text: blockText(block.base, parts) };
      const levels = { sequence, time, bids: sorted(sides.bids, true), asks: sorted(sides.asks, false) };
      block = { baseSeq: sequence, baseTime: time, base: JSON.stringify(levels) };
      parts = [];
      chars = 0;
    }
    for (const [type, , bids, asks] of entry.u) {
      if (type === "s") {
        sides.bids.clear();
        sides.asks.clear();
      }
      for (const [price, quantity] of bids) quantity === "0" ? sides.bids.delete(price) : sides.bids.set(price, quantity);
      for (const [price, quantity] of asks) quantity === "0" ? sides.asks.delete(price) : sides.asks.set(price, quantity);
    }
    const part = JSON.stringify({ t: entry.t, u: entry.u });
    parts.push(part);
    chars += part.length;
    sequence = entry.u[entry.u.length - 1]![1];
    time = entry.t;
  }
  yield { baseSeq: block.baseSeq, baseTime: block.baseTime, text: blockText(block.base, parts) };
}

/** A block as a JSON line: the object's blocks, gunzipped whole, are JSON Lines. */
const blockText = (base: string, entries: readonly string[]) => `{"base":${base},"entries":[${entries.join(",")}]}\n`;

/** The block holding a target: the last one starting at or before it (a block's base is the book after the previous block's last batch). */
export function blockFor(blocks: readonly BlockIndex[], target: { sequence: number } | { time: number }): BlockIndex {
  let found = blocks[0]!;
  for (const block of blocks) {
    if ("sequence" in target ? block.baseSeq <= target.sequence : block.baseTime <= target.time) found = block;
    else break;
  }
  return found;
}

/** The index as a segment's row in D1 holds it: `[offset, baseSeq, baseTime]` a block (the object's bytes beside it end the last). */
export function encodeIndex(blocks: readonly BlockIndex[]): string {
  return JSON.stringify(blocks.map((b) => [b.offset, b.baseSeq, b.baseTime]));
}

export function decodeIndex(text: string, objectBytes: number): BlockIndex[] {
  const rows = JSON.parse(text) as [number, number, number][];
  return rows.map(([offset, baseSeq, baseTime], i) => ({ offset, baseSeq, baseTime, bytes: (rows[i + 1]?.[0] ?? objectBytes) - offset }));
}
