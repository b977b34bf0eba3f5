/**
 * What a market is asked and what it answers, as the edge and the market's host exchange them
 * (docs/edge-reads.md): the question, the answer with the moment it shows, and the admission a
 * read may carry to the market in the same call.
 */

import type { ProblemResult } from "../core/problem";
import type { KlineQuery } from "./candles";
import type { MarketConfig } from "./market-config";
import type { TradePage } from "./trades";

/** What an edge copy holds the answer to: one market read with its parameters. */
export type MarketQuestion =
  | { kind: "ticker" }
  | { kind: "bookTicker" }
  | { kind: "book"; depth: number }
  | { kind: "trades"; limit: number; page?: Omit<TradePage, "limit"> }
  | { kind: "klines"; query: KlineQuery }
  /** Statistics from `openTime` (minute-aligned) to `closeTime`, or to the moment of the answer (a rolling window). */
  | { kind: "window"; openTime: number; closeTime?: number };

/** One answer as the market gave it: its JSON text and the moment it shows. */
export interface MarketAnswer {
  /** The JSON text of the answer ("" when the market answered with a problem). */
  text: string;
  /** Set when the market answered with a problem (e.g. a delisted market): served as that problem. */
  problem?: ProblemResult["problem"];
  /** The market's clock when it answered: the moment the copy shows. */
  at: number;
  /** The market's change counter at `at`: orders two answers given in the same millisecond. */
  version: number;
}

/**
 * A request's admission still to be decided, which the request's first market refresh may carry
 * (`access/admission-ticket.ts`, docs/limits.md#address-gates): the limit's one object call then
 * brings the market's answer too, and the refresh is not a call of its own.
 */
export interface ReadCarrier {
  /** A refresh about to ask its market takes the admission with it, if no other read of the request has. */
  take(): CarriedRefresh | undefined;
}

export interface CarriedRefresh {
  /** Asks the market through the admission's call; `direct` when the request's admission was decided already. */
  carry(market: MarketConfig, question: MarketQuestion, direct: () => Promise<MarketAnswer>): Promise<MarketAnswer>;
  /** The refresh did not ask the market (a location's copy served): the admission is decided by itself. */
  release(): void;
}
