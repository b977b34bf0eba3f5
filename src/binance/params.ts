import type { Hook, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { MarketConfig } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import { MAX_LIST_SYMBOLS } from "../market/symbol-lists";
import { currentRegistry, findMarket } from "../registry/copy";
import { binanceError, illegalParameter, missingParameter } from "./errors";
import { BINANCE_SYMBOL, SYMBOLS_RULE } from "./schemas";
import { exchangeSymbol } from "./translate";

/**
 * The Binance dialect's parameters read as Binance reads them (docs/binance.md#errors): which
 * markets `symbol`, `symbols` and `symbolStatus` ask for, the row limits, and the refusals —
 * missing -1102, malformed -1100, an interval -1120, an unknown or delisted symbol -1121, a
 * repeated one -1101, a status not Binance's -1122, a symbol not in the status asked -1220, a
 * parameter the endpoint does not read -1104.
 */

/** `symbols` may name every listed market where the answer is read from the all-market one; its text is bounded instead. */
const MAX_SYMBOLS_TEXT = 32 * 1024;
/** The most rows one read answers here (as Binance: a larger limit gets this). */
const MAX_ROWS = 1000;

/** A refused parameter in Binance's words: missing or empty is -1102, malformed -1100 (its legal form), an interval -1120. */
export const binanceHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (result.success) return;
  const issue = result.error.issues[0]!;
  const name = String(issue.path[0] ?? "");
  const value = c.req.query(name);
  if (value === undefined || value === "") throw missingParameter(name);
  if (name === "interval") throw binanceError("BAD_INTERVAL");
  if (name === "symbolStatus") throw binanceError("INVALID_SYMBOLSTATUS");
  throw illegalParameter(name, issue.message);
};

/**
 * Refuses a request naming a parameter its endpoint does not read (-1104, with Binance's counts)
 * or one parameter twice (-1101), before anything is read: Binance reads every parameter it is
 * sent, and a misspelt `limt` silently ignored would answer a question the client did not ask.
 *
 * @example
 * createRoute({ ..., request: { query: DepthQuery }, middleware: [limit, onlyParams(DepthQuery)] });
 */
export function onlyParams(schema: z.ZodObject | undefined): MiddlewareHandler<AppEnv> {
  const known = new Set(Object.keys(schema?.shape ?? {}));
  return async (c, next) => {
    const sent = [...new URL(c.req.url).searchParams.keys()];
    if (new Set(sent).size !== sent.length) throw binanceError("TOO_MANY_PARAMETERS", "Duplicate values for a parameter detected.");
    const read = sent.filter((name) => known.has(name)).length;
    if (read !== sent.length) {
      throw binanceError("UNREAD_PARAMETERS", `Not all sent parameters were read; read '${read}' parameter(s) but was sent '${sent.length}'.`);
    }
    await next();
  };
}

/** The market a Binance `symbol` names (exactly as Binance writes it), or -1121. */
export function marketOf(symbol: string): MarketConfig {
  const market = findMarket(symbol);
  if (!market) throw binanceError("BAD_SYMBOL");
  return market;
}

/**
 * `symbols=["A","B"]`: the markets, in that order; malformed is -1100, an unknown or delisted one
 * -1121, one named twice -1101 (Binance's "Duplicate values for a parameter detected."). At most `most` (Binance's 100 where each market is read by
 * itself), else bounded by its text.
 */
function marketsOf(raw: string, most: number): MarketConfig[] {
  if (raw.length > MAX_SYMBOLS_TEXT) throw binanceError("INVALID_PARAMETER", `symbols is at most ${MAX_SYMBOLS_TEXT} characters here.`);
  let names: unknown;
  try {
    names = JSON.parse(raw);
  } catch {
    throw illegalParameter("symbols", SYMBOLS_RULE);
  }
  if (!Array.isArray(names) || !names.every((n): n is string => typeof n === "string" && BINANCE_SYMBOL.test(n))) {
    throw illegalParameter("symbols", SYMBOLS_RULE);
  }
  if (names.length === 0) throw missingParameter("symbols");
  if (names.length > most) throw binanceError("INVALID_PARAMETER", `symbols names at most ${most} markets here.`);
  if (new Set(names).size !== names.length) throw binanceError("TOO_MANY_PARAMETERS", "Duplicate values for a parameter detected.");
  return names.map((name) => {
    const market = marketOf(name);
    // A list answers for each market it names: a delisted one would be silently missing from it.
    if (market.status === "DELISTED") throw binanceError("BAD_SYMBOL");
    return market;
  });
}

/** What a request asks for: one market (`symbol`), some (`symbols`, or every market in `symbolStatus`), or every one. */
export interface Asked {
  one?: MarketConfig;
  many?: MarketConfig[];
}

/**
 * `symbol`, `symbols` or neither, narrowed by `symbolStatus`: the one market (-1220 when it is not
 * in that status), the markets named in that status, every market in it, or undefined for every
 * market.
 */
export function marketsAsked(query: { symbol?: string; symbols?: string; symbolStatus?: string }, most = MAX_LIST_SYMBOLS): Asked {
  if (query.symbol !== undefined && query.symbols !== undefined) throw binanceError("INVALID_PARAMETER_COMBINATION");
  const status = query.symbolStatus;
  const inStatus = (market: MarketConfig) => status === undefined || exchangeSymbol(market).status === status;
  if (query.symbol !== undefined) {
    const one = marketOf(query.symbol);
    if (!inStatus(one)) throw binanceError("SYMBOL_DOES_NOT_MATCH_STATUS");
    return { one };
  }
  if (query.symbols !== undefined) return { many: marketsOf(query.symbols, most).filter(inStatus) };
  if (status !== undefined) return { many: currentRegistry().snapshot.markets.filter(inStatus) };
  return {};
}

/** A row limit: the fallback when unset, at most `most`; 0 is -1100. */
export const rows = (limit: number | undefined, fallback: number, most = MAX_ROWS) => {
  if (limit === 0) throw illegalParameter("limit", `1 - ${most}`);
  return Math.min(limit ?? fallback, most);
};
