/**
 * A market's open book segment as its R2 text will hold it, kept as each commit logs its entries
 * (docs/design.md#isolation): closing a segment is then a join, where it was the whole segment's
 * journal records read back, parsed and written out again inside the group's commit — about 0.3 s
 * of the host's one thread for a busy market's 1 MB segment, every market of the group waiting.
 *
 * Bounded by the host: its markets' open texts share one `BoundedMap` (OPEN_SEGMENTS_MAX_BYTES),
 * least recently extended out first; a market whose text is not held (evicted, or started since
 * its last snapshot) reads its records back at the close, as before.
 *
 * @example
 * const opens = openSegments();                  // one a host
 * const log = new BookLog(sql, ring, { segments: opens, key: "m_btcusdt_" });
 */
import { BoundedMap } from "../core/bounded-map";

/**
 * The host's bound on its markets' open segment texts, at a byte a character (JSON of ASCII, which
 * V8 keeps as one-byte strings): the venue's 64 markets' open texts, about 300 KB each on average
 * and 600 KB at most, where the bound was 8 MB of characters and evicted — each evicted market's
 * close read its records back on the host's thread (docs/capacity.md#history-caches).
 */
const OPEN_SEGMENTS_MAX_BYTES = 32 * 1024 * 1024;

/** One market's open segment: where the log stood at its last append, the base's JSON and each entry's as R2 keeps it. */
export interface OpenSegmentText {
  snapshotN: number;
  logN: number;
  baseSeq: number;
  baseTime: number;
  /** `JSON.stringify(encodeBase(base))`. */
  base: string;
  entries: string[];
  /** The entries' characters. */
  chars: number;
  /** The last entry's time and the sequence of its last update (a segment's index row). */
  lastSeq?: number;
  lastTime?: number;
}

export type OpenSegments = BoundedMap<OpenSegmentText>;

/** One more entry of an open segment: its segment text, and its last update's sequence and its time (where the segment now ends). */
export function addEntry(open: OpenSegmentText, text: string, lastSeq: number, lastTime: number): void {
  open.entries.push(text);
  open.chars += text.length + 1;
  open.lastSeq = lastSeq;
  open.lastTime = lastTime;
}

/** The host's map of open segment texts (a market alone gets one of its own). */
export function openSegments(maxBytes = OPEN_SEGMENTS_MAX_BYTES): OpenSegments {
  return new BoundedMap<OpenSegmentText>(maxBytes, 1_024, (key, open) => key.length + open.base.length + open.chars);
}

/** What a segment covers: its sequences and times, first to last. */
export interface SegmentSpan {
  baseSeq: number;
  lastSeq: number;
  firstTime: number;
  lastTime: number;
}

/** A closed segment as a host keeps it until R2 has it: its text and its index row. */
export interface ClosedSegment extends SegmentSpan {
  text: string;
}

/** A segment's R2 text from its base's JSON and its entries' (`../history/book-history.ts` reads it back). */
export function segmentText(base: string, entries: readonly string[]): string {
  return `{"base":${base},"entries":[${entries.join(",")}]}`;
}
