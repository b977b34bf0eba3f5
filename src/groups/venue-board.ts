import { formatTicker, tickerStats } from "../market/rolling-window";
import type { RegistryIndex } from "../registry/model";
import type { MarketSummary } from "./messages";

export type VenueAnswerKind = "ticker" | "bookTicker";

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

  /** The answer's JSON array over the registry's listed markets, in listing order: built once per change. */
  text(kind: VenueAnswerKind, registry: RegistryIndex, now: number): string {
    const key = `${this.version}:${registry.snapshot.version}`;
    const held = this.built.get(kind);
    if (held?.key === key) return held.text;
    const text = `[${registry.listed.map((market) => this.summaries.get(market.symbol)?.[kind] ?? emptyRecord(kind, market, now)).join(",")}]`;
    this.built.set(kind, { key, text });
    return text;
  }

  /** The tickers that changed since the last call, as a JSON array (null when none did), of listed markets only. */
  takeChanged(registry: RegistryIndex): string | null {
    const symbols = [...this.changed].filter((symbol) => registry.bySymbol.get(symbol)?.status !== "DELISTED" && registry.bySymbol.has(symbol));
    this.changed = new Set();
    if (symbols.length === 0) return null;
    return `[${symbols.map((symbol) => this.summaries.get(symbol)!.ticker).join(",")}]`;
  }
}

function emptyRecord(kind: VenueAnswerKind, market: Parameters<typeof formatTicker>[2] & { symbol: string }, now: number): string {
  if (kind === "ticker") return JSON.stringify(formatTicker(market.symbol, tickerStats([], undefined, now), market, now, undefined, undefined));
  return JSON.stringify({ symbol: market.symbol, bidPrice: null, bidQty: null, askPrice: null, askQty: null, sequence: 0, timestamp: now });
}
