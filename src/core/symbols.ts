import { problem } from "./problem";

/**
 * Market pair symbols (docs/api.md).
 *
 * The canonical form is `BASEQUOTE`, upper case. Clients may also write `BTC-USDT`, `BTC_USDT`
 * or `BTC/USDT` in any case; those name the base and the quote explicitly.
 */
export interface ParsedSymbol {
  /** Canonical `BASEQUOTE`. */
  symbol: string;
  /** Present when the client separated base and quote. */
  base?: string;
  quote?: string;
}

export const MAX_SYMBOL_LENGTH = 32;
const CODE = /^[A-Za-z0-9]+$/;
const SEPARATORS = /[-_/]/;

/** Parses a client-written pair, or returns null when it is not well-formed. */
export function parseSymbol(raw: string): ParsedSymbol | null {
  if (raw.length === 0 || raw.length > MAX_SYMBOL_LENGTH) return null;
  const parts = raw.split(SEPARATORS);
  if (parts.length === 1) {
    return CODE.test(raw) && raw.length >= 2 ? { symbol: raw.toUpperCase() } : null;
  }
  if (parts.length !== 2) return null;
  const [base, quote] = parts as [string, string];
  if (!CODE.test(base) || !CODE.test(quote)) return null;
  const upperBase = base.toUpperCase();
  const upperQuote = quote.toUpperCase();
  return { symbol: upperBase + upperQuote, base: upperBase, quote: upperQuote };
}

/** As {@link parseSymbol}, throwing 400 `INVALID_SYMBOL` for malformed input. */
export function requireSymbol(raw: string): ParsedSymbol {
  const parsed = parseSymbol(raw);
  if (!parsed) {
    throw problem(
      "INVALID_SYMBOL",
      `"${raw.slice(0, MAX_SYMBOL_LENGTH + 8)}" is not a market symbol: write BASEQUOTE (BTCUSDT), BASE-QUOTE, BASE_QUOTE or BASE/QUOTE, letters and digits only, at most ${MAX_SYMBOL_LENGTH} characters`,
    );
  }
  return parsed;
}
