/**
 * A market's history read a page at a time where it lies (docs/history.md#closed-history): the
 * book's pages from closed segments here (R2, the location's cache), the market's host only for
 * what is still open; the trades' pages from the host. Shared by the replay socket and the
 * Tardis-compatible feed, so both read the same pages the same way.
 */
import { marketObject } from "../core/object-ids";
import { type ProblemResult, problem, unwrap } from "../core/problem";
import type { MarketAnswer } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { WireTrade } from "../domain/wire-trade";
import type { ReplayPage } from "./book-replay";
import { type ClosedHistory, closedHistoryOf, closedReplayPage } from "./closed-book-reads";

/** Trades read per call of the market. */
export const TRADES_PAGE = 1_000;

/**
 * The book's page from `from` (no `after`: opening with the whole book at `from`) or after the
 * cursor, to `to`; `host` says whether the market's host answered it (open history).
 *
 * @example
 * const { page } = await bookPage(env, market, from, to, undefined);
 */
export async function bookPage(
  env: Env,
  market: MarketConfig,
  from: number,
  to: number,
  after: number | undefined,
  closed: ClosedHistory = closedHistoryOf(env),
): Promise<{ page: ReplayPage; host: boolean }> {
  const edge = await closedReplayPage(closed, market, from, to, after);
  if (edge) return { page: edge, host: false };
  const page = unwrap((await marketObject(env, market).bookReplay(market, from, to, after)) as unknown as ReplayPage | ProblemResult);
  return { page, host: true };
}

/** Up to TRADES_PAGE trades from `startTime` through `endTime` (both in), from trade id `fromId` on: the market's host answers. */
export async function tradePage(env: Env, market: MarketConfig, startTime: number, endTime: number, fromId: number | undefined): Promise<WireTrade[]> {
  const answer: MarketAnswer = await marketObject(env, market).answer(market, {
    kind: "trades",
    limit: TRADES_PAGE,
    page: { startTime, endTime, ...(fromId !== undefined ? { fromId } : {}) },
  });
  if (answer.problem) throw problem(answer.problem.code, answer.problem.detail, answer.problem.extras);
  return JSON.parse(answer.text) as WireTrade[];
}
