import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProblemError } from "../../src/core/problem";
import { MAX_SYMBOL_LENGTH, parseSymbol, requireSymbol } from "../../src/core/symbols";
import { resolveMarket } from "../../src/market/lookup";
import { defaultMarkets } from "../support/registry";

const MARKETS = await defaultMarkets();

const code = fc.stringMatching(/^[A-Za-z0-9]{1,12}$/);
const separator = fc.constantFrom("-", "_", "/");

function randomCase(text: string, flips: boolean[]): string {
  return [...text].map((ch, i) => (flips[i % flips.length] ? ch.toLowerCase() : ch.toUpperCase())).join("");
}

describe("symbols: canonical BASEQUOTE, separators, any case (docs/api.md)", () => {
  it("every listed market resolves from every accepted spelling to its canonical symbol", () => {
    fc.assert(
      fc.property(fc.constantFrom(...MARKETS), separator, fc.array(fc.boolean(), { minLength: 1 }), (market, sep, flips) => {
        expect(resolveMarket(randomCase(market.symbol, flips)).symbol).toBe(market.symbol);
        expect(resolveMarket(randomCase(`${market.base}${sep}${market.quote}`, flips)).symbol).toBe(market.symbol);
      }),
    );
  });

  it("a separated pair keeps base and quote, upper-cased", () => {
    fc.assert(
      fc.property(code, code, separator, (base, quote, sep) => {
        fc.pre(base.length + quote.length + 1 <= MAX_SYMBOL_LENGTH);
        expect(parseSymbol(`${base}${sep}${quote}`)).toEqual({
          symbol: (base + quote).toUpperCase(),
          base: base.toUpperCase(),
          quote: quote.toUpperCase(),
        });
      }),
    );
  });

  it("anything with other characters, two separators, empty parts or over 32 characters is INVALID_SYMBOL", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (raw) => {
        const wellFormed = raw.length > 0 && raw.length <= MAX_SYMBOL_LENGTH && (/^[A-Za-z0-9]{2,}$/.test(raw) || /^[A-Za-z0-9]+[-_/][A-Za-z0-9]+$/.test(raw));
        if (wellFormed) {
          expect(parseSymbol(raw)).not.toBeNull();
        } else {
          expect(parseSymbol(raw)).toBeNull();
          expect(() => requireSymbol(raw)).toThrow(ProblemError);
        }
      }),
    );
    for (const bad of ["", "BTC--USDT", "BTC-", "-USDT", "BTC USDT", "BTC-US_DT", "Ω", "A".repeat(33)]) {
      expect(() => requireSymbol(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "INVALID_SYMBOL", status: 400 }));
    }
  });

  it("a well-formed pair that is not listed is UNKNOWN_SYMBOL, also when the split is wrong", () => {
    for (const unknown of ["DOGEUSDT", "BTC-EUR", "BT-CUSDT", "USDTBTC"]) {
      expect(() => resolveMarket(unknown), unknown).toThrow(expect.objectContaining({ code: "UNKNOWN_SYMBOL", status: 404 }));
    }
  });
});
