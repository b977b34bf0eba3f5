/**
 * A catch-up's reads (./catch-up.ts): one page of a stream's history at a time, from its cursor up
 * to where the shard's live copy stands — what a stream holds until it is sent.
 */
import { marketObject } from "../core/object-ids";
import { problem, unwrap } from "../core/problem";
import type { MarketAnswer } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { WireTrade } from "../domain/wire-trade";
import type { ReplayPage } from "../history/book-replay";
import { type ReplayBookMessage, replayTime } from "../history/book-replay";
import { type ClosedHistory, closedReplayPage } from "../history/closed-book-reads";
import { closedTradesFrom } from "../history/closed-trade-reads";
import { chunkSize } from "../history/trade-archive";
import { tradeWindows } from "./conflation";
import { type StreamName, streamFrame } from "./protocol";
import type { ResumeLog } from "./resume-log";
import type { WireBook } from "./wire-book";

/** One read of a book's history returns about this much: a page is what a stream holds here until it is sent. */
const CATCH_UP_PAGE_BYTES = 64 * 1024;
const TRADES_PAGE = 1_000;

export interface Pending {
  time: number;
  text: string;
  /** The book's sequence, or the last trade id, once this is sent. */
  cursor: number;
}

export interface StreamCatchUp {
  stream: StreamName;
  cursor: number | undefined;
  buffer: Pending[];
  /** Trades: the last read found nothing more (without a live trade to stop at, that is the end). */
  exhausted: boolean;
  emptyReads: number;
}

/** A stream's catch-up from its cursor (undefined: from `from`), nothing read yet. */
export function streamAt(stream: StreamName, cursor: number | undefined): StreamCatchUp {
  return { stream, cursor, buffer: [], exhausted: false, emptyReads: 0 };
}

/** What the reads need of their shard. */
export interface PageSource {
  readonly env: Env;
  /** The shard's copies of books, and its last live messages. */
  readonly books: ReadonlyMap<string, WireBook>;
  readonly recent: ResumeLog;
  /** Closed history, read by the shard itself (`../history/closed-book-reads.ts`). */
  readonly closed: ClosedHistory;
  /** Resolves once the shard has a copy of the market's book (or gave up waiting). */
  baseOf(symbol: string): Promise<void>;
}

/** Frames of closed blocks' messages, made once (those messages are shared by every page that slices them: `../history/block-messages.ts`). */
const frames = new WeakMap<ReplayBookMessage, { stream: string; text: string }>();

function frameOf(stream: string, data: ReplayBookMessage): string {
  const known = frames.get(data);
  if (known?.stream === stream) return known.text;
  const text = streamFrame(stream, data);
  frames.set(data, { stream, text });
  return text;
}

/** The book stream's next page of history from its cursor, up to where the shard's live copy stands. */
export async function bookPage(host: PageSource, from: number, s: StreamCatchUp, market: MarketConfig): Promise<Pending[]> {
  const symbol = market.symbol;
  if (!host.books.has(symbol)) await host.baseOf(symbol);
  const copy = host.books.get(symbol);
  if (!copy) throw problem("UNAVAILABLE", `the live book of ${symbol} is not here yet; try again shortly`);
  const cap = copy.sequence;
  if (s.cursor !== undefined && s.cursor >= cap) return [];
  const limits = { toSequence: cap, maxBytes: CATCH_UP_PAGE_BYTES };
  // A page in closed history is read by this shard; the market's host answers only what is open.
  const page =
    (await closedReplayPage(host.closed, market, from, Number.MAX_SAFE_INTEGER, s.cursor, limits)) ??
    unwrap((await marketObject(host.env, market).bookReplay(market, from, Number.MAX_SAFE_INTEGER, s.cursor, limits)) as unknown as ReplayPage);
  const first = s.cursor === undefined;
  return page.messages.map((data: ReplayBookMessage, i) => ({
    time: replayTime(data, i, from, first),
    text: frameOf(s.stream.name, data),
    cursor: data.sequence,
  }));
}

/** A page of trades from the market's host. */
async function hostTrades(host: PageSource, market: MarketConfig, page: { startTime: number } | { fromId: number }): Promise<WireTrade[]> {
  const answer: MarketAnswer = await marketObject(host.env, market).answer(market, { kind: "trades", limit: TRADES_PAGE, page });
  if (answer.problem) throw problem(answer.problem.code, answer.problem.detail, answer.problem.extras);
  return JSON.parse(answer.text) as WireTrade[];
}

/** The trades stream's next page from its cursor, up to the shard's last live trade. */
export async function tradesPage(host: PageSource, from: number, s: StreamCatchUp, market: MarketConfig): Promise<Pending[]> {
  const cap = host.recent.lastTradeId(market.symbol);
  if (s.cursor !== undefined && cap !== undefined && s.cursor >= cap) return [];
  // Both pages run forwards (a bound below, none above: a page with an upper bound is the last
  // `limit` before it, which skipped the middle); what lies past the live mark is left for live.
  // The first page by time, the next by id, so a late trade (an older time, a newer id) is not left out.
  // Archived trades are read here from R2; the market's host is asked for the first page (by time) and what is hot.
  const archived =
    s.cursor === undefined
      ? undefined
      : await closedTradesFrom(host.closed, market.symbol, chunkSize(host.env.TRADE_ARCHIVE_CHUNK), s.cursor + 1, TRADES_PAGE, cap);
  const read = archived ?? (await hostTrades(host, market, s.cursor === undefined ? { startTime: from } : { fromId: s.cursor + 1 }));
  const trades = cap === undefined ? read : read.filter((t) => t.tradeId <= cap);
  s.exhausted = trades.length === 0;
  // Nothing from `from` up to the live stream's last trade: everything up to it is before `from`.
  if (trades.length === 0 && s.cursor === undefined && cap !== undefined) s.cursor = cap;
  return tradeWindows(trades).map((window) => ({ time: window[0]!.time, text: streamFrame(s.stream.name, window), cursor: window.at(-1)!.tradeId }));
}
