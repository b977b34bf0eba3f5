import { problem } from "../core/problem";
import { requireSymbol } from "../core/symbols";
import type { MarketConfig } from "../domain/market-config";
import { listedMarket, symbolAsWritten } from "./lookup";

/** Symbols one list call may name: every listed market, with room to grow. */
export const MAX_LIST_SYMBOLS = 100;

/**
 * The markets a `symbols=A,B` list names, in the order written (docs/api.md#many-markets-in-one-call):
 * 400 `INVALID_SYMBOL` for a malformed entry, 400 `VALIDATION_FAILED` for an empty or repeated
 * one or too many, 404 `UNKNOWN_SYMBOL` naming every well-formed one that is not listed.
 */
export function resolveSymbolList(raw: string): MarketConfig[] {
  const entries = raw.split(",").map((s) => s.trim());
  if (entries.length > MAX_LIST_SYMBOLS) throw problem("VALIDATION_FAILED", `symbols names at most ${MAX_LIST_SYMBOLS} markets`);
  if (entries.some((s) => s === "")) throw problem("VALIDATION_FAILED", "symbols has an empty entry: write A,B,C");
  const markets: MarketConfig[] = [];
  const unknown: string[] = [];
  for (const entry of entries) {
    const parsed = requireSymbol(entry);
    const market = listedMarket(parsed);
    if (market) markets.push(market);
    else unknown.push(symbolAsWritten(parsed));
  }
  if (unknown.length > 0) {
    throw problem(
      "UNKNOWN_SYMBOL",
      `${unknown.join(", ")} ${unknown.length === 1 ? "is not a listed market" : "are not listed markets"}; GET /api/markets lists them`,
      {
        symbols: unknown,
      },
    );
  }
  const seen = new Set<string>();
  for (const market of markets) {
    if (seen.has(market.symbol)) throw problem("VALIDATION_FAILED", `symbols names ${market.symbol} twice`);
    seen.add(market.symbol);
  }
  return markets;
}
