/**
 * A closed block's messages made once (docs/history.md#closed-history): the block replayed from its
 * checkpoint and conflated as a live subscriber got it, window by window, kept by the isolate or
 * shard that read it. A replay's or catch-up's page after a cursor at a window's end is then a
 * slice of them — no replay, no formatting, no checksum again — however many readers walk the
 * same hours (five catch-ups from the last hour read the same blocks). Pure.
 */
import type { MarketConfig } from "../domain/market-config";
import type { BookSegment } from "../writes/book-entries";
import { bookOf, conflatedMessages, type ReplayBookMessage } from "./book-replay";

/** A block's messages, with each one's JSON length (a page's bytes) and where each starts. */
export interface BlockMessages {
  messages: ReplayBookMessage[];
  bytes: number[];
  /** The index of the message that goes on after a sequence (its `firstSequence` − 1). */
  after: Map<number, number>;
  /** About what they hold in memory: their text, once as objects and once as the frames sent. */
  held: number;
}

/**
 * The block's messages from its checkpoint, conflated as live.
 *
 * @example
 * const made = blockMessages(block, market);
 */
export function blockMessages(block: BookSegment, scales: Pick<MarketConfig, "priceScale" | "quantityScale">): BlockMessages {
  const book = bookOf(block, scales.priceScale, scales.quantityScale);
  const messages = conflatedMessages(book, block.entries, Number.MAX_SAFE_INTEGER);
  const bytes = messages.map((message) => JSON.stringify(message).length);
  const after = new Map(messages.map((message, i) => [(message.firstSequence ?? message.sequence) - 1, i]));
  return { messages, bytes, after, held: 4 * bytes.reduce((sum, n) => sum + n, 0) };
}

/**
 * The page after `cursor` from a block's messages, as `segmentPage` would make it: messages until
 * their bytes pass `maxBytes` (the one that passes them in), none past `to` or `toSequence`.
 * Undefined when the cursor is not at a window's end of this block, or the next message reaches
 * past the bounds (a window cut there is made apart: `segmentPage`). `more`: the block holds more
 * after the page.
 */
export function pageOf(
  made: BlockMessages,
  cursor: number,
  limits: { to: number; toSequence: number; maxBytes?: number },
): { messages: ReplayBookMessage[]; more: boolean } | undefined {
  const start = made.after.get(cursor);
  if (start === undefined) return undefined;
  const maxBytes = limits.maxBytes ?? Number.POSITIVE_INFINITY;
  let i = start;
  for (let bytes = 0; i < made.messages.length && bytes <= maxBytes; i++) {
    const message = made.messages[i]!;
    if (message.time > limits.to || message.sequence > limits.toSequence) break;
    bytes += made.bytes[i]!;
  }
  if (i === start) return undefined;
  return { messages: made.messages.slice(start, i), more: i < made.messages.length };
}
