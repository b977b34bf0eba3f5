/**
 * The market registry: every listed market and asset, in one place.
 *
 * This is configuration, not state: a market's *current* status (TRADING, HALTED, DELISTED)
 * is owned by its MarketObject, which starts from `initialStatus` here.
 */
export type MarketStatus = "TRADING" | "HALTED" | "DELISTED";
export type AssetStatus = "ACTIVE" | "INACTIVE";

export interface MarketConfig {
  symbol: string;
  base: string;
  quote: string;
  priceScale: number;
  quantityScale: number;
  initialStatus: MarketStatus;
}

export interface AssetConfig {
  asset: string;
  name: string;
  /** On-chain decimals of the asset. */
  decimals: number;
  status: AssetStatus;
}

function market(base: string, quote: string, priceScale: number, quantityScale: number): MarketConfig {
  return { symbol: base + quote, base, quote, priceScale, quantityScale, initialStatus: "TRADING" };
}

export const MARKETS: readonly MarketConfig[] = [
  market("BTC", "USDT", 2, 5),
  market("ETH", "USDT", 2, 4),
  market("SOL", "USDT", 3, 2),
  market("XRP", "USDT", 4, 1),
  market("ETH", "BTC", 5, 4),
  market("SOL", "BTC", 7, 2),
  market("BTC", "USDC", 2, 5),
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
