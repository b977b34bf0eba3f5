/**
 * One minute of the Tardis-compatible feed (docs/tardis.md#data-feeds), pure: a market's book
 * messages and trades of the minute as the lines `tardis-dev` reads — the moment they happened
 * (ISO 8601 to a tenth of a microsecond, 28 characters), a space, and Binance's combined-stream
 * message as the Binance dialect sends it live. The book's messages are replayed into a book, so a
 * resync inside the minute (a publisher's snapshot) is sent as the diff that makes it, and the top
 * of the book is known for `bookTicker`.
 */

import { depthUpdateEvent, tradeEvent } from "../binance/translate";
import type { WireTrade } from "../domain/wire-trade";
import type { ReplayBookMessage } from "../history/book-replay";
import { MessageBook } from "../history/message-book";

/** The channels served, as `tardis-dev` names Binance's. */
export const FEED_CHANNELS = ["trade", "depth", "depthSnapshot", "bookTicker"] as const;
export type FeedChannel = (typeof FEED_CHANNELS)[number];

/** A market's part of a minute: the book before it (a whole-book message), the book's messages in it, its trades. */
export interface MarketMinute {
  symbol: string;
  scales: { priceScale: number; quantityScale: number };
  channels: ReadonlySet<FeedChannel>;
  /** The book as it stood just before the minute; absent when no book channel is asked or the book has no history then. */
  opening?: ReplayBookMessage;
  book: readonly ReplayBookMessage[];
  trades: readonly WireTrade[];
  /** Whether the minute opens with a generated `depthSnapshot` (the replay's first minute, and each hour's). */
  snapshot: boolean;
  /** The minute's start (Unix ms): the snapshot's moment. */
  start: number;
}

/** `2026-12-07T10:00:00.1230000Z`: the 28 characters (tenths of a microsecond, as Tardis writes them) `tardis-dev` cuts each line at. */
function localTimestamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}0000Z`;
}

interface Line {
  time: number;
  text: string;
}

const line = (time: number, stream: string, data: unknown, generated = false): Line => ({
  time,
  text: `${localTimestamp(time)} ${JSON.stringify(generated ? { stream, generated: true, data } : { stream, data })}`,
});

/** Top of book as `bookTicker` says it: best bid and ask, an empty side at `"0"`. */
function topOf(book: MessageBook, symbol: string) {
  const { bids, asks } = book.levels(1);
  return { u: book.sequence, s: symbol, b: bids[0]?.[0] ?? "0", B: bids[0]?.[1] ?? "0", a: asks[0]?.[0] ?? "0", A: asks[0]?.[1] ?? "0" };
}

const topText = (top: ReturnType<typeof topOf>) => `${top.b}|${top.B}|${top.a}|${top.A}`;

/** One market's lines of the minute, in time order (a book message before the trades of its moment). */
function marketLines(minute: MarketMinute): Line[] {
  const { symbol, channels } = minute;
  const name = symbol.toLowerCase();
  const out: Line[] = [];
  const book = new MessageBook(minute.scales);
  // The top last said (a bookTicker goes out when it changes).
  let said = "";
  const quote = (time: number) => {
    if (!channels.has("bookTicker")) return;
    const top = topOf(book, symbol);
    const text = topText(top);
    if (text !== said) out.push(line(time, `${name}@bookTicker`, top));
    said = text;
  };
  if (minute.opening) {
    book.apply(minute.opening);
    if (minute.snapshot && channels.has("depthSnapshot")) {
      const { sequence, bids, asks } = minute.opening;
      out.push(line(minute.start, `${name}@depthSnapshot`, { lastUpdateId: sequence, bids, asks }, true));
    }
    // The top at the minute's start is said with the snapshot, else it was the minute before's.
    if (minute.snapshot) quote(minute.start);
    else said = topText(topOf(book, symbol));
  }
  for (const message of minute.book) {
    const { bids, asks } = book.apply(message);
    if (channels.has("depth")) {
      out.push(
        line(
          message.time,
          `${name}@depth@100ms`,
          depthUpdateEvent(symbol, message.firstSequence ?? message.sequence, message.sequence, bids, asks, message.time),
        ),
      );
    }
    quote(message.time);
  }
  if (channels.has("trade")) for (const trade of minute.trades) out.push(line(trade.time, `${name}@trade`, tradeEvent(trade, symbol, trade.time)));
  // Stable: the book's lines keep their order before the trades of the same moment.
  return out.sort((x, y) => x.time - y.time);
}

/** A market's lines of the minute, as `minuteText` merges them. */
export type MarketLines = Line[];

/** One market's lines of the minute, and their characters (a minute is bounded by them). */
export function minuteLines(minute: MarketMinute): { lines: MarketLines; chars: number } {
  const lines = marketLines(minute);
  return { lines, chars: lines.reduce((n, l) => n + l.text.length + 1, 0) };
}

/**
 * The minute's body before gzip: every market's lines merged by time, a newline after each
 * (empty when nothing happened: `tardis-dev` reads no line).
 *
 * @example
 * const text = minuteText([minuteLines({ symbol: "BTCUSDT", scales, channels: new Set(["trade"]), book: [], trades, snapshot: false, start }).lines]);
 */
export function minuteText(markets: readonly MarketLines[]): string {
  const all = markets.flat().sort((x, y) => x.time - y.time);
  return all.map((l) => `${l.text}\n`).join("");
}
