/**
 * The market registry: every listed market and asset, in one place.
 *
 * This is configuration, not state: a market's *current* status (TRADING, HALTED, DELISTED)
 * is owned by its MarketObject, which starts from `initialStatus` here.
 */
export type MarketStatus = "TRADING" | "HALTED" | "DELISTED";
export type AssetStatus = "ACTIVE" | "INACTIVE";

/** A market's trading rules as published in `/api/markets` (decimal strings at the market's scales). */
export interface TradingRules {
  tickSize: string;
  stepSize: string;
  minQty: string;
  maxQty: string;
  /** The least price × quantity of a trade, in the quote asset. */
  minNotional: string;
}

export interface MarketConfig {
  symbol: string;
  base: string;
  quote: string;
  priceScale: number;
  quantityScale: number;
  initialStatus: MarketStatus;
  rules: TradingRules;
}

export interface AssetConfig {
  asset: string;
  name: string;
  /** On-chain decimals of the asset. */
  decimals: number;
  status: AssetStatus;
}

function market(base: string, quote: string, priceScale: number, quantityScale: number, limits: { maxQty: string; minNotional: string }): MarketConfig {
  // Tick and step are one unit of the market's scales; the least quantity is one step.
  const unit = (scale: number) => (scale === 0 ? "1" : `0.${"0".repeat(scale - 1)}1`);
  const rules = { tickSize: unit(priceScale), stepSize: unit(quantityScale), minQty: unit(quantityScale), ...limits };
  return { symbol: base + quote, base, quote, priceScale, quantityScale, initialStatus: "TRADING", rules };
}

const IN_USD = { minNotional: "0.10" };
const IN_BTC = { minNotional: "0.000001" };

export const MARKETS: readonly MarketConfig[] = [
  market("BTC", "USDT", 2, 5, { maxQty: "1000", ...IN_USD }),
  market("ETH", "USDT", 2, 4, { maxQty: "10000", ...IN_USD }),
  market("SOL", "USDT", 3, 2, { maxQty: "100000", ...IN_USD }),
  market("XRP", "USDT", 4, 1, { maxQty: "10000000", ...IN_USD }),
  market("ETH", "BTC", 5, 4, { maxQty: "10000", ...IN_BTC }),
  market("SOL", "BTC", 7, 2, { maxQty: "100000", ...IN_BTC }),
  market("BTC", "USDC", 2, 5, { maxQty: "1000", ...IN_USD }),
];

export const ASSETS: readonly AssetConfig[] = [
  { asset: "BTC", name: "Bitcoin", decimals: 8, status: "ACTIVE" },
  { asset: "ETH", name: "Ether", decimals: 18, status: "ACTIVE" },
  { asset: "SOL", name: "Solana", decimals: 9, status: "ACTIVE" },
  { asset: "XRP", name: "XRP", decimals: 6, status: "ACTIVE" },
  { asset: "USDT", name: "Tether USD", decimals: 6, status: "ACTIVE" },
  { asset: "USDC", name: "USD Coin", decimals: 6, status: "ACTIVE" },
];

const marketsBySymbol = new Map(MARKETS.map((m) => [m.symbol, m]));
const assetsByCode = new Map(ASSETS.map((a) => [a.asset, a]));

export function findMarket(symbol: string): MarketConfig | undefined {
  return marketsBySymbol.get(symbol);
}

export function findAsset(code: string): AssetConfig | undefined {
  return assetsByCode.get(code);
}

export const QUOTE_ASSETS: readonly string[] = [...new Set(MARKETS.map((m) => m.quote))];
