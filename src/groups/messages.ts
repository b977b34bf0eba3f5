import type { PriceReport } from "../market/price-index";
import type { StreamEvent, TickerWindow } from "../streams/protocol";

/**
 * What a market sends its group relay, in the order it happened (docs/design.md#group-relays):
 * stream events for the shards subscribed to it, shards joining (with their welcome, the base
 * book) or leaving, and its summary for the all-market answers.
 */
export type RelayOp =
  | { symbol: string; events: StreamEvent[] }
  | { symbol: string; join: string; welcome: StreamEvent[] }
  | { symbol: string; leave: string }
  | { symbol: string; summary: MarketSummary };

/**
 * A market's part of the all-market answers, as ready JSON text: its 24 h ticker and its top of
 * the book at `at`, and its price report once it has traded. Sent at most once a second.
 */
export interface MarketSummary {
  symbol: string;
  at: number;
  /** A `Ticker` record as JSON. */
  ticker: string;
  /** Its rolling windows' records (`GET /api/window`) as JSON, for `tickers.{window}`; not stored with the summary. */
  windows?: Partial<Record<TickerWindow, string>>;
  /** A `BookTicker` record as JSON. */
  bookTicker: string;
  /** When the market last took an update from its feed (null: never). */
  lastUpdateTime: number | null;
  price?: PriceReport;
}
