/**
 * A book log's records as text (docs/design.md#the-write-path): a batch's entry, a commit's row,
 * a snapshot's base, and a closed segment as R2 keeps it — the encodings `book-log.ts` writes and
 * reads, and history reads back. Pure: no storage here.
 */
import type { BookUpdate, UnitLevel } from "../domain/order-book";
import { type ClosedSegment, segmentText } from "./open-segments";

/** A batch's applied book updates as the publisher sent them, and when the market applied them. */
export interface BookEntry {
  time: number;
  updates: BookUpdate[];
  /** The batch's fingerprint (`order-book.ts`): an exact resend is recognised after a restart too. */
  fingerprint?: string;
}

/** The whole book at a sequence: where a segment of the history starts. */
export interface BookBase {
  sequence: number;
  time: number;
  bids: UnitLevel[];
  asks: UnitLevel[];
}

/** A closed stretch of the book's history: the book at its start and every batch after it, in order (docs/history.md#book-history). */
export interface BookSegment {
  base: BookBase;
  entries: BookEntry[];
}

export type TextLevels = [string, string][];
const encode = (levels: readonly UnitLevel[]): TextLevels => levels.map(([price, quantity]) => [price.toString(), quantity.toString()]);
export const decode = (levels: TextLevels) => levels.map(([price, quantity]): UnitLevel => [BigInt(price), BigInt(quantity)]);

/** An entry as stored: `{"t":time,"u":[["s"|"d",sequence,bids,asks],…],"f":fingerprint}`, units as decimal text. */
function encodeEntry(entry: BookEntry): string {
  return withFingerprint(segmentEntry(entry), entry.fingerprint);
}

/** An entry as a segment in R2 holds it: `encodeEntry` without the fingerprint. */
export function segmentEntry(entry: BookEntry): string {
  return JSON.stringify({ t: entry.time, u: entry.updates.map((u) => [u.type === "snapshot" ? "s" : "d", u.sequence, encode(u.bids), encode(u.asks)]) });
}

/** `segmentEntry`'s text with the fingerprint as its last key: `encodeEntry`'s, with no second stringify. */
export function withFingerprint(text: string, fingerprint: string | undefined): string {
  return fingerprint ? `${text.slice(0, -1)},"f":${JSON.stringify(fingerprint)}}` : text;
}

/** The sequence of an entry's last update: where a segment ending with it ends. */
export const lastSequenceOf = (entry: BookEntry): number => entry.updates[entry.updates.length - 1]!.sequence;

/** A segment read back (after a restart, or when its text was not held) as a host keeps it. */
export function closedSegment(segment: BookSegment): ClosedSegment {
  const last = segment.entries[segment.entries.length - 1]!;
  return {
    baseSeq: segment.base.sequence,
    lastSeq: lastSequenceOf(last),
    firstTime: segment.base.time,
    lastTime: last.time,
    text: segmentText(JSON.stringify(encodeBase(segment.base)), segment.entries.map(segmentEntry)),
  };
}

/**
 * A ring row is one commit's record (docs/design.md#the-write-path): `{"e":[entry,…],"tr":[trade,…]}`,
 * the book entries of the commit's batches and, opaque here, their trades as the trade blocks
 * pack them with the commit's time (`a`).
 */
export function encodeCommit(entries: readonly BookEntry[], trades: readonly unknown[], at: number): string {
  return encodeCommitOf(entries.map(encodeEntry), trades, at);
}

export function encodeCommitOf(entries: readonly string[], trades: readonly unknown[], at: number): string {
  return `{"e":[${entries.join(",")}]${trades.length > 0 ? `,"tr":${JSON.stringify(trades)},"a":${at}` : ""}}`;
}

export function decodeEntry(value: { t: number; u: ["s" | "d", number, TextLevels, TextLevels][]; f?: string }): BookEntry {
  return {
    time: value.t,
    updates: value.u.map(([type, sequence, bids, asks]) => ({ type: type === "s" ? "snapshot" : "delta", sequence, bids: decode(bids), asks: decode(asks) })),
    ...(value.f ? { fingerprint: value.f } : {}),
  };
}

export function encodeBase(base: BookBase): { sequence: number; time: number; bids: TextLevels; asks: TextLevels } {
  return { sequence: base.sequence, time: base.time, bids: encode(base.bids), asks: encode(base.asks) };
}

export function decodeBase(value: { sequence: number; time: number; bids: TextLevels; asks: TextLevels }): BookBase {
  return { sequence: value.sequence, time: value.time, bids: decode(value.bids), asks: decode(value.asks) };
}

/** An update as an entry stores it: its type's letter, its sequence, its levels as decimal text. */
export type StoredUpdate = ["s" | "d", number, TextLevels, TextLevels];
/** A stored ring entry: since the history, the batch's updates (`t`, `u`); before it, the batch's net change (`bids`, `asks`). */
export type StoredChange = { t: number; u: StoredUpdate[]; f?: string };
/** The snapshot row: the whole book at its sequence and time, the log position (`n`), the last batch's fingerprint and the last updates' fingerprints (`r`). */
export type StoredSnapshot = { bids: TextLevels; asks: TextLevels; sequence: number; time: number; n: number; f?: string; r?: [number, string][] };

/** A ring row as stored: a commit's record. */
type StoredRow = { e: StoredChange[]; tr?: unknown[]; a?: number };
export const rowOf = (text: string): { changes: StoredChange[]; trades: unknown[]; at: number } => {
  const value = JSON.parse(text) as StoredRow;
  return { changes: value.e, trades: value.tr ?? [], at: value.a ?? 0 };
};

/** A commit's record read back: its entries, its trades as packed, and its time. */
export function decodeCommit(text: string): { entries: BookEntry[]; trades: unknown[]; at: number } {
  const { changes, trades, at } = rowOf(text);
  return { entries: changes.map(decodeEntry), trades, at };
}
export const changesOf = (text: string): StoredChange[] => rowOf(text).changes;
