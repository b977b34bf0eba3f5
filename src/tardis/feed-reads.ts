/**
 * A minute of the Tardis-compatible feed read from the venue's history (docs/tardis.md#data-feeds):
 * each market's book from the book's pages — closed segments read here, the market's host only
 * for what is still open — and its trades from its day's dataset once built (else the host); made
 * into the minute's lines by feed-lines.ts.
 */
import { pollUntil } from "../core/cross-request-wait";
import { ProblemError, problem } from "../core/problem";
import { MINUTE_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import type { WireTrade } from "../domain/wire-trade";
import type { ReplayBookMessage } from "../history/book-replay";
import type { ClosedHistory } from "../history/closed-book-reads";
import { datasetTrades } from "../history/dataset-trades";
import { bookPage, TRADES_PAGE, tradePage } from "../history/history-pages";
import { logFailure } from "../logs/log";
import { billed } from "../metrics/billed-bindings";
import { type FeedChannel, type MarketLines, minuteLines, minuteText } from "./feed-lines";

/**
 * A minute's lines an answer holds at most: about 2.5 times this in the isolate's memory at once
 * (the lines, their text and the gzip), within its 128 MB. A busy market's minute (1,000 trades and
 * 600 book messages a second) is about 13 MB.
 */
const MAX_MINUTE_CHARS = 16 * 1024 * 1024;
/** Minutes an isolate makes at once (each up to about 40 MB while made); the others wait their turn, up to MINUTE_WAIT_MS. */
const MINUTES_AT_ONCE = 2;
const MINUTE_WAIT_MS = 30_000;
let making = 0;

/** A market asked for, and on which channels. */
export interface FeedAsk {
  market: MarketConfig;
  channels: ReadonlySet<FeedChannel>;
}

/** What reading a minute took: the market hosts' calls (0: all of it closed history and built days, read here), and whether it can change no more. */
export interface MinuteRead {
  text: string;
  hostCalls: number;
  final: boolean;
}

/**
 * The book of `market` in the minute from `start`: the whole book just before it, and its
 * messages in it. A market whose book history begins later than the minute's start has none
 * before it (the host says its history begins later: 404), and no opening.
 */
async function bookOfMinute(env: Env, closed: ClosedHistory, market: MarketConfig, start: number, count: () => void) {
  const from = start - 1;
  const to = start + MINUTE_MS - 1;
  const messages: ReplayBookMessage[] = [];
  let after: number | undefined;
  for (;;) {
    let read: Awaited<ReturnType<typeof bookPage>>;
    try {
      read = await bookPage(env, market, from, to, after, closed);
    } catch (error) {
      if (after === undefined && error instanceof ProblemError && error.code === "NOT_FOUND") return { opening: undefined, book: [] };
      throw error;
    }
    if (read.host) count();
    messages.push(...read.page.messages);
    if (read.page.next === undefined) break;
    after = read.page.next;
  }
  const [opening, ...book] = messages;
  return { opening, book };
}

/**
 * The minute's trades: from its day's `trades` dataset once the day is built (R2, no host), else
 * the market's host a page at a time. `final`: they can change no more (a day past late trades).
 */
async function tradesOfMinute(env: Env, market: MarketConfig, start: number, count: () => void): Promise<{ trades: WireTrade[]; final: boolean }> {
  const end = start + MINUTE_MS - 1;
  // A built day's, read here; its R2 failing, the host answers as for a day not built.
  const built = await datasetTrades(billed(env, "HISTORY"), market.symbol, start, end).catch((error: unknown) => {
    logFailure("a built day's trades could not be read; the host answers", { error, symbol: market.symbol });
    return undefined;
  });
  if (built) return built;
  const out: WireTrade[] = [];
  let fromId: number | undefined;
  for (;;) {
    count();
    const page = await tradePage(env, market, start, end, fromId);
    out.push(...page);
    if (page.length < TRADES_PAGE) return { trades: out, final: false };
    fromId = page[page.length - 1]!.tradeId + 1;
  }
}

const BOOK_CHANNELS: readonly FeedChannel[] = ["depth", "depthSnapshot", "bookTicker"];

/**
 * The minute from `start` of each market asked, as one body of lines; `snapshot`: it opens with
 * each book's generated `depthSnapshot` (a replay's first minute, and each hour's). Bounded in
 * bytes: at most MAX_MINUTE_CHARS of lines (past them, 400: fewer markets), and MINUTES_AT_ONCE
 * made at once an isolate (the rest wait their turn, then 503).
 *
 * @example
 * const { text, hostCalls } = await readMinute(env, closedHistoryOf(env), asks, start, true);
 */
export async function readMinute(env: Env, closed: ClosedHistory, asks: readonly FeedAsk[], start: number, snapshot: boolean): Promise<MinuteRead> {
  // Polled, not awaited: a request never waits on another's promise (core/cross-request-wait.ts).
  if (!(await pollUntil(() => making < MINUTES_AT_ONCE, Date.now() + MINUTE_WAIT_MS, Date.now))) {
    throw problem("UNAVAILABLE", "this isolate is making other minutes of the feed; ask again shortly", {}, { "Retry-After": "1" });
  }
  making += 1;
  try {
    return await makeMinute(env, closed, asks, start, snapshot);
  } finally {
    making -= 1;
  }
}

async function makeMinute(env: Env, closed: ClosedHistory, asks: readonly FeedAsk[], start: number, snapshot: boolean): Promise<MinuteRead> {
  let hostCalls = 0;
  let final = true;
  const count = () => {
    hostCalls += 1;
  };
  // A market at a time, its lines made before the next is read: what one minute holds is bounded by MAX_MINUTE_CHARS.
  const all: MarketLines[] = [];
  let chars = 0;
  for (const { market, channels } of asks) {
    const wantsBook = BOOK_CHANNELS.some((c) => channels.has(c));
    const [book, trades] = await Promise.all([
      wantsBook ? bookOfMinute(env, closed, market, start, count) : { opening: undefined, book: [] },
      channels.has("trade") ? tradesOfMinute(env, market, start, count) : { trades: [], final: true },
    ]);
    final &&= trades.final;
    const made = minuteLines({
      symbol: market.symbol,
      scales: market,
      channels,
      ...(book.opening ? { opening: book.opening } : {}),
      book: book.book,
      trades: trades.trades,
      snapshot,
      start,
    });
    chars += made.chars;
    if (chars > MAX_MINUTE_CHARS) {
      throw problem(
        "VALIDATION_FAILED",
        `this minute of these markets is over ${MAX_MINUTE_CHARS / 1024 / 1024} MiB of messages (${market.symbol} reached it): ask for fewer markets a request`,
      );
    }
    all.push(made.lines);
  }
  return { text: minuteText(all), hostCalls, final: final && hostCalls === 0 };
}
