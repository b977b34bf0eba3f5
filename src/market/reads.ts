import { marketObject } from "../core/object-ids";
import { unwrap } from "../core/problem";
import type { Kline, KlineQuery } from "./klines";
import { resolveMarket } from "./lookup";
import type { MarketObject, MarketView, WireTrade } from "./market-object";
import { readPriceSnapshot } from "./price-cache";
import { type AssetPrice, type PriceSnapshot, pricesIn } from "./price-index";
import { ASSETS, type AssetConfig, MARKETS } from "./registry";
import type { TickerRecord } from "./rolling-window";

/**
 * The market reads behind both surfaces: `/api/*` (public) and `/v1/*` (signed) answer the
 * same records from the same code, as documented.
 */
function viaMarket<T>(env: Env, symbol: string, call: (stub: DurableObjectStub<MarketObject>) => Promise<T>): Promise<T> {
  return call(marketObject(env, symbol));
}

export async function readTicker(env: Env, pair: string): Promise<TickerRecord> {
  const { symbol } = resolveMarket(pair);
  return unwrap(await viaMarket(env, symbol, (stub) => stub.ticker(symbol)));
}

/**
 * The order book snapshot (docs/api.md) as the JSON text of the response: the market sends its
 * levels already serialized, and only the scalar fields are written around them here.
 */
export async function readOrderBookJson(env: Env, pair: string, depth: number): Promise<string> {
  const { symbol } = resolveMarket(pair);
  const book = unwrap(await viaMarket(env, symbol, (stub) => stub.orderBookText(symbol, depth)));
  return `{"symbol":${JSON.stringify(book.symbol)},"sequence":${book.sequence},"timestamp":${book.timestamp},${book.levels.slice(1)}`;
}

export async function readTrades(env: Env, pair: string, limit: number): Promise<WireTrade[]> {
  const { symbol } = resolveMarket(pair);
  return unwrap(await viaMarket(env, symbol, (stub) => stub.trades(symbol, limit)));
}

export async function readKlines(env: Env, pair: string, query: KlineQuery): Promise<Kline[]> {
  const { symbol } = resolveMarket(pair);
  return unwrap(await viaMarket(env, symbol, (stub) => stub.klines(symbol, query)));
}

/** Every market with its current status (asked of each market's object, in parallel). */
export async function readMarkets(env: Env): Promise<{ markets: MarketView[]; assets: AssetConfig[] }> {
  const markets = await Promise.all(MARKETS.map((m) => viaMarket(env, m.symbol, (stub) => stub.describe(m.symbol))));
  return { markets, assets: [...ASSETS] };
}

/** Prices computed from the snapshot this isolate holds, per question; reset with each new snapshot. */
let computed: { snapshot: PriceSnapshot; answers: Map<string, AssetPrice[]> } | undefined;

export async function readPrices(
  env: Env,
  { quote, assets }: { quote: string; assets?: string[] },
): Promise<{ quote: string; asOf: number | null; data: AssetPrice[] }> {
  const snapshot = await readPriceSnapshot(env);
  if (!snapshot) return { quote, asOf: null, data: [] };
  if (computed?.snapshot !== snapshot) computed = { snapshot, answers: new Map() };
  const question = `${quote}:${assets?.join(",") ?? "*"}`;
  let data = computed.answers.get(question);
  if (!data) {
    data = pricesIn(snapshot, quote, assets);
    // Bounded: the assets list is the client's, so only so many distinct questions are kept.
    if (computed.answers.size < 256) computed.answers.set(question, data);
  }
  return { quote, asOf: snapshot.asOf, data };
}
