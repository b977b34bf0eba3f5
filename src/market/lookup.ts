import { problem } from "../core/problem";
import { type ParsedSymbol, requireSymbol } from "../core/symbols";
import type { MarketConfig } from "../domain/market-config";
import { findMarket } from "../registry/copy";

/**
 * The listed market a parsed symbol names, if any; a separated form (`BTC-USDT`) must match its
 * legs. `find` is this isolate's registry copy unless the caller holds another (the system of record).
 */
export function listedMarket(parsed: ParsedSymbol, find: (symbol: string) => MarketConfig | undefined = findMarket): MarketConfig | undefined {
  const market = find(parsed.symbol);
  if (!market || (parsed.base !== undefined && (parsed.base !== market.base || parsed.quote !== market.quote))) return undefined;
  return market;
}

/** How an unlisted symbol is named back to the client: `BTC/EUR` when it named the legs, else `BTCEUR`. */
export function symbolAsWritten(parsed: ParsedSymbol): string {
  return parsed.base ? `${parsed.base}/${parsed.quote}` : parsed.symbol;
}

/**
 * Resolves what a client wrote (`btc-usdt`, `BTC/USDT`, `BTCUSDT`) to a listed market:
 * 400 `INVALID_SYMBOL` when malformed, 404 `UNKNOWN_SYMBOL` when well-formed but not listed.
 */
export function resolveMarket(raw: string): MarketConfig {
  const parsed = requireSymbol(raw);
  const market = listedMarket(parsed);
  if (!market) {
    throw problem("UNKNOWN_SYMBOL", `${symbolAsWritten(parsed)} is not a listed market; GET /api/markets lists them`);
  }
  return market;
}
