/**
 * A market's book as hourly files (docs/history.md#book-files): names, R2 keys and CSV rows.
 * Pure; the market's book history gathers the hour's segments and writes them.
 */
import { formatUnits } from "../core/decimal";
import { HOUR_MS, MINUTE_MS } from "../domain/intervals";
import type { BookUpdate, OrderBook } from "../domain/order-book";
import type { BookSegment } from "../writes/book-entries";

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

/** Markets close the segment holding an hour's end within this long after it (docs/history.md#staggered-closes). */
export const CLOSE_SPREAD_MS = 5 * MINUTE_MS;
/**
 * An hour is handed to its files' Workflow this long after it ends (the alarm; docs/history.md#book-files):
 * once every market closed it, so every segment holding it is in R2 and published.
 */
export const BOOK_FILES_AFTER_MS = CLOSE_SPREAD_MS + MINUTE_MS;

/**
 * An hour's files are kept this long (the R2 lifecycle rule on `data/spot/hourly/`, docs/operations.md):
 * its segments are kept for ever, so an older hour asked for is built again from them.
 */
export const BOOK_FILES_KEPT_DAYS = 30;

/** `data/spot/hourly/book/BTCUSDT/BTCUSDT-book-2026-11-25-14.zip`, and its bookTicker sibling. */
export function hourlyKey(kind: BookFileKind, symbol: string, hour: number): string {
  return `data/spot/hourly/${kind}/${symbol}/${symbol}-${kind}-${hourName(hour)}.zip`;
}

/** What the rows of an hour's next segment need of those before (`HourRows.carry`). */
export interface HourCarry {
  opened: boolean;
  changes: number;
  /** The bookTicker file's last row's prices, so an unchanged top is not written again. */
  lastTop: string;
}

/**
 * The hour's rows, made a segment at a time (`segment`), replaying the segments in order into
 * `book` (at the first one's base):
 * - book: `sequence,time,side,price,quantity,update_type` — first the whole book as the hour began
 *   (`snapshot`, at its sequence and time), then every level each update of the hour set, in
 *   order (`delta`; quantity 0 removes the level; a publisher's snapshot in the hour is again
 *   every level of the new book, marked `snapshot`);
 * - bookTicker: `sequence,time,bid_price,bid_qty,ask_price,ask_qty` at the opening and at every
 *   update that changed the best levels (empty fields: that side is empty).
 */
export class HourRows {
  /** Whether an update fell in the hour (else the hour has no files). */
  opened: boolean;
  /** Level changes in the hour (the opening snapshot's rows not counted). */
  changes: number;
  private lastTop: string;
  private readonly end: number;

  constructor(
    /** The book at the first segment's base: each segment's rows are made from its own base. */
    private readonly book: OrderBook,
    private readonly hour: number,
    /** Where the segments before left the hour (`carry`), when each is made apart. */
    carry: HourCarry = { opened: false, changes: 0, lastTop: "" },
  ) {
    this.end = hour + HOUR_MS;
    this.opened = carry.opened;
    this.changes = carry.changes;
    this.lastTop = carry.lastTop;
  }

  /** What the next segment's rows need of this one's: a few bytes, handed from one Workflow step to the next. */
  get carry(): HourCarry {
    return { opened: this.opened, changes: this.changes, lastTop: this.lastTop };
  }

  /** The sequence of the hour's last update so far. */
  get lastSequence(): number {
    return this.book.sequence;
  }

  /** The rows of the segment's batches in the hour, as the two files' text. */
  segment(segment: BookSegment): { book: string; bookTicker: string } {
    const { book } = this;
    const price = (p: bigint) => formatUnits(p, book.priceScale);
    const quantity = (q: bigint) => (q === 0n ? "0" : formatUnits(q, book.quantityScale));
    const rows: string[] = [];
    const tops: string[] = [];
    const top = () => {
      const { bid, ask } = book.top();
      const text = `${bid ? `${price(bid[0])},${quantity(bid[1])}` : ","},${ask ? `${price(ask[0])},${quantity(ask[1])}` : ","}`;
      if (text !== this.lastTop) tops.push(`${book.sequence},${book.updatedAt},${text}\n`);
      this.lastTop = text;
    };
    const levelRows = (update: BookUpdate, time: number, type: string) => {
      for (const [side, levels] of [
        ["bid", update.bids],
        ["ask", update.asks],
      ] as const)
        for (const [p, q] of levels) rows.push(`${update.sequence},${time},${side},${price(p)},${quantity(q)},${type}\n`);
    };
    for (const entry of segment.entries) {
      if (entry.time >= this.end) break;
      if (entry.time >= this.hour && !this.opened) {
        this.opened = true;
        levelRows({ type: "snapshot", sequence: book.sequence, bids: book.bids.entries(), asks: book.asks.entries() }, book.updatedAt, "snapshot");
        top();
      }
      for (const update of entry.updates) {
        if (this.opened) {
          levelRows(update, entry.time, update.type);
          this.changes += update.bids.length + update.asks.length;
        }
        book.replay(update, entry.time);
        if (this.opened) top();
      }
    }
    return { book: rows.join(""), bookTicker: tops.join("") };
  }
}
