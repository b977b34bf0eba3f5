/**
 * A market's book as hourly files (docs/history.md#book-files): names, R2 keys and CSV rows.
 * Pure; the market's book history gathers the hour's segments and writes them.
 */
import { formatUnits } from "../core/decimal";
import type { BookSegment } from "../market/book-log";
import type { BookUpdate, OrderBook } from "../market/order-book";
import { HOUR_MS } from "./intervals";

export const BOOK_FILE_KINDS = ["book", "bookTicker"] as const;
export type BookFileKind = (typeof BOOK_FILE_KINDS)[number];

/** A UTC hour as `YYYY-MM-DD-HH`. */
export function hourName(start: number): string {
  return new Date(start).toISOString().slice(0, 13).replace("T", "-");
}

/** A UTC hour from `YYYY-MM-DD-HH`, or undefined when the text is not a real hour. */
export function parseHour(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}-\d{2}$/.test(text)) return undefined;
  const start = Date.parse(`${text.slice(0, 10)}T${text.slice(11)}:00:00Z`);
  return Number.isNaN(start) || hourName(start) !== text ? undefined : start;
}

export const hourOf = (time: number) => Math.floor(time / HOUR_MS) * HOUR_MS;

/** `data/spot/hourly/book/BTCUSDT/BTCUSDT-book-2026-11-25-14.zip`, and its bookTicker sibling. */
export function hourlyKey(kind: BookFileKind, symbol: string, hour: number): string {
  return `data/spot/hourly/${kind}/${symbol}/${symbol}-${kind}-${hourName(hour)}.zip`;
}

/** The hour's two files as CSV text, and the sequences they span. */
export interface HourFiles {
  book: string;
  bookTicker: string;
  /** The sequence of the opening snapshot (the book as the hour began) and of the hour's last update. */
  firstSequence: number;
  lastSequence: number;
  /** Level changes in the hour (the opening snapshot's rows not counted). */
  changes: number;
}

/**
 * The hour's rows, replaying `segments` (in order, the first at its base in `book`):
 * - book: `sequence,time,side,price,quantity,update_type` — first the whole book as the hour began
 *   (`snapshot`, at its sequence and time), then every level each update of the hour set, in
 *   order (`delta`; quantity 0 removes the level; a publisher's snapshot in the hour is again
 *   every level of the new book, marked `snapshot`);
 * - bookTicker: `sequence,time,bid_price,bid_qty,ask_price,ask_qty` at the opening and at every
 *   update that changed the best levels (empty fields: that side is empty).
 * Undefined when no update fell in the hour.
 */
export function hourFiles(book: OrderBook, segments: readonly BookSegment[], hour: number): HourFiles | undefined {
  const end = hour + HOUR_MS;
  const price = (p: bigint) => formatUnits(p, book.priceScale);
  const quantity = (q: bigint) => (q === 0n ? "0" : formatUnits(q, book.quantityScale));
  const rows: string[] = [];
  const tops: string[] = [];
  let lastTop = "";
  const top = () => {
    const { bid, ask } = book.top();
    const text = `${bid ? `${price(bid[0])},${quantity(bid[1])}` : ","},${ask ? `${price(ask[0])},${quantity(ask[1])}` : ","}`;
    if (text !== lastTop) tops.push(`${book.sequence},${book.updatedAt},${text}\n`);
    lastTop = text;
  };
  const levelRows = (update: BookUpdate, time: number, type: string) => {
    for (const [side, levels] of [
      ["bid", update.bids],
      ["ask", update.asks],
    ] as const)
      for (const [p, q] of levels) rows.push(`${update.sequence},${time},${side},${price(p)},${quantity(q)},${type}\n`);
  };
  let opened = false;
  let firstSequence = 0;
  let changes = 0;
  for (const segment of segments) {
    for (const entry of segment.entries) {
      if (entry.time >= end) break;
      if (entry.time >= hour && !opened) {
        opened = true;
        firstSequence = book.sequence;
        levelRows({ type: "snapshot", sequence: book.sequence, bids: book.bids.entries(), asks: book.asks.entries() }, book.updatedAt, "snapshot");
        top();
      }
      for (const update of entry.updates) {
        if (opened) {
          levelRows(update, entry.time, update.type);
          changes += update.bids.length + update.asks.length;
        }
        book.replay(update, entry.time);
        if (opened) top();
      }
    }
  }
  if (!opened) return undefined;
  return { book: rows.join(""), bookTicker: tops.join(""), firstSequence, lastSequence: book.sequence, changes };
}
