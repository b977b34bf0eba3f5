import { z } from "@hono/zod-openapi";
import { DepthQuery, forwardTimeRange, KlinesQueryFields, TradesQueryFields, tradePageRules } from "../market/schemas";

const SymbolParam = z.string().max(64).openapi({ example: "BTCUSDT", description: "Market symbol; BTC-USDT, BTC_USDT, BTC/USDT also accepted" });

/** `symbol` answers one record, `symbols` an array in its order, neither every market. */
export const SymbolOrSymbolsQuery = z
  .object({
    // OpenAPI cannot make two query parameters exclusive (a `oneOf` would need one exploded
    // object parameter, which common generators serialize differently), so the rule is in
    // both descriptions and enforced by the refine below.
    symbol: SymbolParam.optional().openapi({
      description: "Market symbol (BTC-USDT, BTC_USDT, BTC/USDT also accepted): answers one record. Not together with symbols",
    }),
    symbols: z.string().max(1024).optional().openapi({
      example: "BTCUSDT,ETHUSDT",
      description: "Comma-separated symbols: answers an array in their order. Not together with symbol; neither answers every listed market",
    }),
  })
  .refine((q) => q.symbol === undefined || q.symbols === undefined, { message: "send symbol or symbols, not both", path: ["symbols"] });

export const SymbolDepthQuery = DepthQuery.extend({ symbol: SymbolParam });
export const SymbolTradesQuery = tradePageRules(TradesQueryFields.extend({ symbol: SymbolParam }));
export const SymbolKlinesQuery = forwardTimeRange(KlinesQueryFields.extend({ symbol: SymbolParam }));
