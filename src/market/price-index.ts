import { type Decimal, formatDecimal, multiply, parseDecimal } from "../core/decimal";
import type { MarketStatus, RegistryIndex } from "../domain/market-config";
import { changePercent } from "../domain/rolling-window";

/** What a market tells the price index after it trades (at most once a second). */
export interface PriceReport {
  symbol: string;
  status: MarketStatus;
  lastPrice: string;
  openPrice: string;
  changePercent24h: string;
  /** Time of the market's latest trade. */
  updatedAt: number;
}

/** The snapshot kept in KV: the latest report of every market that has traded. */
export interface PriceSnapshot {
  asOf: number;
  markets: Record<string, PriceReport>;
}

export interface AssetPrice {
  asset: string;
  name: string;
  decimals: number;
  price: string;
  changePercent24h: string;
  source: string;
  updatedAt: number;
}

interface Leg {
  report: PriceReport;
  last: Decimal;
  open: Decimal;
}

function leg(registry: RegistryIndex, snapshot: PriceSnapshot, base: string, quote: string): Leg | undefined {
  const report = snapshot.markets[base + quote];
  const market = registry.bySymbol.get(base + quote);
  if (!report || !market || market.base !== base || market.status === "DELISTED" || report.status === "DELISTED") return undefined;
  return { report, last: parseDecimal(report.lastPrice), open: parseDecimal(report.openPrice) };
}

/**
 * Prices of active assets in `quote` (docs/api.md, `/api/prices`): the direct pair
 * `ASSETQUOTE`, else the first route through one bridge asset in registry order
 * (`SOLBTC×BTCUSDT`), in listing order. A route's price is exact, then rounded half away from zero to the finer
 * of its two legs' scales; its change is computed from the legs' opening prices.
 */
export function pricesIn(registry: RegistryIndex, snapshot: PriceSnapshot, quote: string, assets?: readonly string[]): AssetPrice[] {
  const wanted = assets ? assets.map((code) => registry.byAsset.get(code)).filter((a) => a !== undefined) : registry.snapshot.assets;
  const out: AssetPrice[] = [];
  for (const asset of wanted) {
    if (asset.status !== "ACTIVE" || asset.asset === quote) continue;
    const common = { asset: asset.asset, name: asset.name, decimals: asset.decimals };
    const direct = leg(registry, snapshot, asset.asset, quote);
    if (direct) {
      const { lastPrice, changePercent24h, updatedAt, symbol } = direct.report;
      out.push({ ...common, price: lastPrice, changePercent24h, source: symbol, updatedAt });
      continue;
    }
    for (const first of registry.byBase.get(asset.asset) ?? []) {
      const a = leg(registry, snapshot, asset.asset, first.quote);
      const b = a && leg(registry, snapshot, first.quote, quote);
      if (!a || !b) continue;
      const last = multiply(a.last, b.last);
      const open = multiply(a.open, b.open);
      out.push({
        ...common,
        price: formatDecimal(last, Math.max(a.last.scale, b.last.scale)),
        changePercent24h: changePercent(last.units, open.units),
        source: `${a.report.symbol}×${b.report.symbol}`,
        updatedAt: Math.max(a.report.updatedAt, b.report.updatedAt),
      });
      break;
    }
  }
  return out;
}
