/**
 * The market registry as data (docs/operations.md#listing-markets): what a listed market and
 * asset are, how a listing's scales follow from its tick and step, and the checks a listing or a
 * rules change must pass. Pure: the operator routes, the D1 store and every isolate's copy use it.
 */
import { compare, type Decimal, DecimalError, exactAtScale, parseDecimal } from "../core/decimal";
import type { FieldError } from "../core/problem";
import { MAX_SYMBOL_LENGTH } from "../core/symbols";

export type MarketStatus = "TRADING" | "HALTED" | "DELISTED";
export type AssetStatus = "ACTIVE" | "INACTIVE";

/** A market's trading rules as published in `/api/markets` (decimal strings). */
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
  /** Decimals of prices and quantities: fixed at listing (stored units are at these scales). */
  priceScale: number;
  quantityScale: number;
  status: MarketStatus;
  rules: TradingRules;
  /** Listing order, from 0: the registry's order, and the market's group (`groupOf`). */
  ordinal: number;
  /** Bumped by every change of the market's rules or status: the newest config wins everywhere. */
  revision: number;
}

export interface AssetConfig {
  asset: string;
  name: string;
  /** On-chain decimals of the asset. */
  decimals: number;
  status: AssetStatus;
}

/** The registry at one version: every market (delisted ones too) in listing order, and every asset. */
export interface RegistrySnapshot {
  version: number;
  markets: MarketConfig[];
  assets: AssetConfig[];
}

export { GROUP_SIZE, groupOf } from "../core/market-groups";

export const ASSET_CODE = /^[A-Z0-9]{1,16}$/;
export const ASSET_CODE_RULE = "1–16 upper-case letters and digits";
export const MAX_LISTINGS_PER_REQUEST = 500;

/** A listing as the operator sends it (already shape-checked by the schema). */
export interface MarketListing extends TradingRules {
  base: string;
  quote: string;
}

export type RuleChange = Partial<TradingRules>;

const RULE_FIELDS = ["tickSize", "stepSize", "minQty", "maxQty", "minNotional"] as const;

/** A positive plain decimal, with trailing zeros dropped (`"0.010"` has scale 2), or null. */
function positive(text: string): Decimal | null {
  let value: Decimal;
  try {
    value = parseDecimal(text);
  } catch (error) {
    if (error instanceof DecimalError) return null;
    throw error;
  }
  if (value.units <= 0n) return null;
  let { units, scale } = value;
  while (scale > 0 && units % 10n === 0n) {
    units /= 10n;
    scale -= 1;
  }
  return { units, scale };
}

/** The most decimals a market's prices or quantities may have. */
const MAX_MARKET_SCALE = 18;

/**
 * Checks a market's rules at its scales and against each other; each failure names its field
 * under `path`. Quantities must be whole steps, minQty ≥ stepSize, maxQty ≥ minQty, and the
 * minimum notional must be exact at priceScale + quantityScale.
 */
function checkRules(rules: TradingRules, priceScale: number, quantityScale: number, path: string): FieldError[] {
  const errors: FieldError[] = [];
  const values = {} as Record<(typeof RULE_FIELDS)[number], Decimal>;
  for (const field of RULE_FIELDS) {
    const value = positive(rules[field]);
    if (value) values[field] = value;
    else errors.push({ path: `${path}${field}`, message: "must be a positive plain decimal (e.g. 0.01)" });
  }
  if (errors.length > 0) return errors;
  const scaleOf: Record<(typeof RULE_FIELDS)[number], number> = {
    tickSize: priceScale,
    stepSize: quantityScale,
    minQty: quantityScale,
    maxQty: quantityScale,
    minNotional: priceScale + quantityScale,
  };
  for (const field of RULE_FIELDS) {
    if (exactAtScale(values[field], scaleOf[field]) === null) {
      errors.push({ path: `${path}${field}`, message: `has more than ${scaleOf[field]} decimals (the market's scales are fixed when it is listed)` });
    }
  }
  if (errors.length > 0) return errors;
  const step = exactAtScale(values.stepSize, quantityScale)!;
  const minQty = exactAtScale(values.minQty, quantityScale)!;
  const maxQty = exactAtScale(values.maxQty, quantityScale)!;
  if (compare(values.minQty, values.stepSize) < 0) errors.push({ path: `${path}minQty`, message: `must be at least stepSize ${rules.stepSize}` });
  else if (minQty % step !== 0n) errors.push({ path: `${path}minQty`, message: `must be a whole number of steps of ${rules.stepSize}` });
  if (maxQty < minQty) errors.push({ path: `${path}maxQty`, message: `must be at least minQty ${rules.minQty}` });
  else if (maxQty % step !== 0n) errors.push({ path: `${path}maxQty`, message: `must be a whole number of steps of ${rules.stepSize}` });
  return errors;
}

/**
 * A new market from a listing: symbol = base + quote, priceScale the decimals of the tick size,
 * quantityScale those of the step size. Returns the market, or every failure of the listing
 * (`path` prefixes the field names, e.g. `3.` for the fourth item of a bulk request).
 */
export function deriveMarket(
  listing: MarketListing,
  ordinal: number,
  path = "",
): { market: MarketConfig; errors?: undefined } | { market?: undefined; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (listing.base === listing.quote) errors.push({ path: `${path}quote`, message: "must differ from base" });
  const symbol = listing.base + listing.quote;
  if (symbol.length > MAX_SYMBOL_LENGTH) errors.push({ path: `${path}quote`, message: `base + quote is at most ${MAX_SYMBOL_LENGTH} characters` });
  const tick = positive(listing.tickSize);
  const step = positive(listing.stepSize);
  for (const [field, value] of [
    ["tickSize", tick],
    ["stepSize", step],
  ] as const) {
    if (value && value.scale > MAX_MARKET_SCALE) errors.push({ path: `${path}${field}`, message: `has more than ${MAX_MARKET_SCALE} decimals` });
  }
  const priceScale = tick?.scale ?? 0;
  const quantityScale = step?.scale ?? 0;
  errors.push(...checkRules(listing, priceScale, quantityScale, path));
  if (errors.length > 0) return { errors };
  const rules: TradingRules = {
    tickSize: listing.tickSize,
    stepSize: listing.stepSize,
    minQty: listing.minQty,
    maxQty: listing.maxQty,
    minNotional: listing.minNotional,
  };
  return { market: { symbol, base: listing.base, quote: listing.quote, priceScale, quantityScale, status: "TRADING", rules, ordinal, revision: 1 } };
}

/** A market's rules after a change, or every failure of it; the scales stay as listed. */
export function changeRules(market: MarketConfig, change: RuleChange): { rules: TradingRules; errors: FieldError[] } {
  const rules = { ...market.rules, ...change };
  return { rules, errors: checkRules(rules, market.priceScale, market.quantityScale, "") };
}

export const STATUS_TRANSITIONS: Record<MarketStatus, readonly MarketStatus[]> = {
  TRADING: ["TRADING", "HALTED", "DELISTED"],
  HALTED: ["HALTED", "TRADING", "DELISTED"],
  DELISTED: ["DELISTED"],
};

/** A market as `/api/markets` and the operator API show it (the routes check it against `MarketSchema`). */
export type MarketView = ReturnType<typeof marketView>;

export function marketView(market: MarketConfig) {
  const { symbol, base, quote, status, priceScale, quantityScale, rules } = market;
  return { symbol, base, quote, status, priceScale, quantityScale, ...rules };
}

/** Lookups over one snapshot, built once per version. */
export class RegistryIndex {
  readonly bySymbol: Map<string, MarketConfig>;
  readonly byAsset: Map<string, AssetConfig>;
  /** Markets that are not delisted, in listing order: what the all-market answers list. */
  readonly listed: MarketConfig[];
  /** Quote assets of the listed markets, in listing order (the `prices.{QUOTE}` streams). */
  readonly quotes: string[];
  /** Every market by its base asset, in listing order (the price index's bridges). */
  readonly byBase = new Map<string, MarketConfig[]>();

  constructor(readonly snapshot: RegistrySnapshot) {
    this.bySymbol = new Map(snapshot.markets.map((m) => [m.symbol, m]));
    this.byAsset = new Map(snapshot.assets.map((a) => [a.asset, a]));
    this.listed = snapshot.markets.filter((m) => m.status !== "DELISTED");
    this.quotes = [...new Set(this.listed.map((m) => m.quote))];
    for (const market of snapshot.markets) {
      const list = this.byBase.get(market.base);
      if (list) list.push(market);
      else this.byBase.set(market.base, [market]);
    }
  }
}

/** The markets a publishing key may write: canonical symbols, or every market. */
export type MarketGrant = "*" | string[];

/** True when `grant` lets its key publish into `symbol` (canonical). */
export function grantsMarket(grant: MarketGrant, symbol: string): boolean {
  return grant === "*" || grant.includes(symbol);
}
