import { z } from "@hono/zod-openapi";
import { DepthQuery, forwardTimeRange, KlinesQueryFields, TradesQueryFields, tradePageRules } from "../market/schemas";

const SymbolParam = z.string().max(64).openapi({ example: "BTCUSDT", description: "Market symbol; BTC-USDT, BTC_USDT, BTC/USDT also accepted" });

/** `symbol` answers one record, `symbols` an array in its order, neither every market. */
export const SymbolOrSymbolsQuery = z
  .object({
    symbol: SymbolParam.optional(),
    symbols: z.string().max(1024).optional().openapi({ example: "BTCUSDT,ETHUSDT", description: "Comma-separated symbols; answers an array" }),
  })
  .refine((q) => q.symbol === undefined || q.symbols === undefined, { message: "send symbol or symbols, not both", path: ["symbols"] });

export const SymbolDepthQuery = DepthQuery.extend({ symbol: SymbolParam });
export const SymbolTradesQuery = tradePageRules(TradesQueryFields.extend({ symbol: SymbolParam }));
export const SymbolKlinesQuery = forwardTimeRange(KlinesQueryFields.extend({ symbol: SymbolParam }));
