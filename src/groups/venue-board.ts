import type { z } from "@hono/zod-openapi";
import { RATE_LIMITS } from "../access/rate-limit";
import { type MarketConfig, marketView, type RegistryIndex } from "../domain/market-config";
import { formatTicker, tickerStats } from "../domain/rolling-window";
import type { FeedStatusSchema } from "../market/schemas";
import type { TickerWindow } from "../streams/protocol";
import type { MarketSummary } from "./messages";

export type VenueAnswerKind = "ticker" | "bookTicker" | "markets";
/** The kinds that are arrays of one record per listed market. */
export type VenueRecordKind = "ticker" | "bookTicker";

const RATE_LIMITS_TEXT = JSON.stringify(RATE_LIMITS);

/** What `GET /api/status` says of the venue's feeds (docs/api.md#feed-health); its shape is the schema's. */
export type VenueStatus = z.infer<typeof FeedStatusSchema>;

/**
 * The all-market answers (docs/api.md#all-markets), pure: the latest summary of every market, and
 * the `GET /api/ticker` and `GET /api/book-ticker` answers built from them as ready text once per
 * change — a read between two changes is handed the same string. A listed market that has not
 * reported yet shows the record of a market with no trade and an empty book.
 */
export class VenueBoard {
  private readonly summaries = new Map<string, MarketSummary>();
  /** Bumped by every applied batch of summaries. */
  version = 0;
  /** The newest moment any summary shows. */
  updatedAt = 0;
  private readonly built = new Map<VenueAnswerKind, { key: string; text: string }>();
  /** Markets whose summary changed since `takeChanged` last ran (the `tickers` stream). */
  private changed = new Set<string>();

  constructor(initial: Iterable<MarketSummary> = []) {
    for (const summary of initial) this.summaries.set(summary.symbol, summary);
  }

  /** Takes summaries; an older one than held for its market is ignored. Returns those taken. */
  apply(summaries: readonly MarketSummary[]): MarketSummary[] {
    const taken: MarketSummary[] = [];
    for (const summary of summaries) {
      const held = this.summaries.get(summary.symbol);
      if (held && held.at > summary.at) continue;
      this.summaries.set(summary.symbol, summary);
      this.changed.add(summary.symbol);
      this.updatedAt = Math.max(this.updatedAt, summary.at);
      taken.push(summary);
    }
    if (taken.length > 0) this.version += 1;
    return taken;
  }

  summary(symbol: string): MarketSummary | undefined {
    return this.summaries.get(symbol);
  }

  /**
   * The answer's JSON text over the registry's markets, in listing order, built once per change:
   * the tickers or tops of the books of the listed markets, or `GET /api/markets` (every market,
   * delisted ones too, with its feed's `lastUpdateTime`, the assets and the limits).
   */
  text(kind: VenueAnswerKind, registry: RegistryIndex, now: number): string {
    const key = `${this.version}:${registry.snapshot.version}`;
    const held = this.built.get(kind);
    if (held?.key === key) return held.text;
    const text =
      kind === "markets"
        ? `{"markets":${JSON.stringify(registry.snapshot.markets.map((m) => ({ ...marketView(m), lastUpdateTime: this.summaries.get(m.symbol)?.lastUpdateTime ?? null })))},"assets":${JSON.stringify(registry.snapshot.assets)},"rateLimits":${RATE_LIMITS_TEXT}}`
        : `[${registry.listed.map((market) => this.summaries.get(market.symbol)?.[kind] ?? emptyRecord(kind, market, now)).join(",")}]`;
    this.built.set(kind, { key, text });
    return text;
  }

  /**
   * The feeds' health at `now`: trading markets with no update for longer than `staleAfterMs`
   * (or none since they were listed) are stale; halted ones are counted apart.
   */
  status(registry: RegistryIndex, now: number, staleAfterMs: number): VenueStatus {
    const staleMarkets: string[] = [];
    const haltedMarkets: string[] = [];
    let trading = 0;
    for (const market of registry.listed) {
      if (market.status === "HALTED") {
        haltedMarkets.push(market.symbol);
        continue;
      }
      trading += 1;
      const last = this.summaries.get(market.symbol)?.lastUpdateTime ?? null;
      if (last === null || now - last > staleAfterMs) staleMarkets.push(market.symbol);
    }
    return { serverTime: now, staleAfterMs, trading, halted: haltedMarkets.length, stale: staleMarkets.length, staleMarkets, haltedMarkets };
  }

  /** The listed markets whose summary changed since the last call. */
  takeChanged(registry: RegistryIndex): string[] {
    const symbols = [...this.changed].filter((symbol) => {
      const market = registry.bySymbol.get(symbol);
      return market !== undefined && market.status !== "DELISTED";
    });
    this.changed = new Set();
    return symbols;
  }

  /**
   * The records of these markets as a JSON array (null when there is none): their 24 h tickers
   * (the `tickers` stream), or one rolling window's records (`tickers.{window}`).
   */
  recordsOf(symbols: readonly string[], window?: TickerWindow): string | null {
    const records = symbols.flatMap((symbol) => {
      const summary = this.summaries.get(symbol);
      const text = window ? summary?.windows?.[window] : summary?.ticker;
      return text ? [text] : [];
    });
    return records.length === 0 ? null : `[${records.join(",")}]`;
  }
}

function emptyRecord(kind: VenueRecordKind, market: MarketConfig, now: number): string {
  if (kind === "ticker") return JSON.stringify({ ...formatTicker(market.symbol, tickerStats([], undefined, now), market, now), lastUpdateTime: null });
  return JSON.stringify({ symbol: market.symbol, bidPrice: null, bidQty: null, askPrice: null, askQty: null, sequence: 0, timestamp: now });
}
