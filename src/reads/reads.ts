import type { Context, TypedResponse } from "hono";
import { BoundedMap, isolateCaches, textBytes } from "../core/bounded-map";
import { jsonText } from "../core/json-text";
import type { KlineQuery } from "../domain/candles";
import { nextOpenTime, openTimeOf, parseTimeZone } from "../domain/intervals";
import type { MarketQuestion } from "../domain/market-answer";
import { type MarketView, marketView, type RegistryIndex } from "../domain/market-config";
import { minuteOf, type TickerRecord } from "../domain/rolling-window";
import type { TradePage } from "../domain/trades";
import type { VenueRecordKind } from "../groups/venue-board";
import type { AppEnv } from "../http/env";
import { resolveMarket } from "../market/lookup";
import { pricesIn } from "../market/price-index";
import { resolveSymbolList } from "../market/symbol-lists";
import { currentRegistry } from "../registry/copy";
import { type EdgeRead, edgePolicy, type ReadContext, readMarket, readVenue } from "./edge-reads";
import { readPriceSnapshot } from "./price-cache";

/**
 * The market reads behind both surfaces: `/api/*` (public) and `/v1/*` (signed) answer the
 * same records from the same code, through the edge copies (docs/edge-reads.md). Each read
 * gives the answer's JSON text with the moment it shows; `sendRead` writes it out.
 */

/** The read context of a request: Hono throws when asked for an execution context it lacks. */
export function readContext(c: Context<AppEnv>): ReadContext {
  let waitUntil: ReadContext["waitUntil"];
  try {
    const execution = c.executionCtx;
    waitUntil = (promise) => execution.waitUntil(promise);
  } catch {
    waitUntil = undefined;
  }
  return { env: c.env, waitUntil, carrier: c.get("readCarrier") };
}

/**
 * Writes a read out with what a client or a CDN needs to judge it: `X-As-Of` (the moment it
 * shows, Unix ms), `Age` (whole seconds since it was fetched), and, past the max age because
 * the market failed, `Warning: 110`. `max-age=0`: a copy may already be up to the max age old.
 */
export function sendRead<T>(c: Context<AppEnv>, read: EdgeRead): Response & TypedResponse<T, 200, "json"> {
  const staleIfError = Math.ceil(edgePolicy(c.env).staleIfErrorMs / 1000);
  const headers: Record<string, string> = {
    "Cache-Control": `public, max-age=0, stale-if-error=${staleIfError}`,
    Age: String(Math.floor(read.ageMs / 1000)),
    "X-As-Of": String(read.asOf),
  };
  if (read.stale) headers.Warning = '110 - "Response is Stale"';
  return jsonText<T>(c, read.text, headers);
}

/** One question about the market a client named (any accepted spelling of its pair). */
export function readPair(ctx: ReadContext, pair: string, question: MarketQuestion): Promise<EdgeRead> {
  return readMarket(ctx, resolveMarket(pair), question);
}

/** The klines question of a validated query: `timeZone` becomes the offset (none for UTC, so UTC shares one copy). */
export function klinesQuestion({ timeZone, ...query }: Omit<KlineQuery, "offsetMs"> & { timeZone?: string | undefined }): MarketQuestion {
  const offsetMs = timeZone === undefined ? 0 : (parseTimeZone(timeZone) ?? 0);
  return { kind: "klines", query: offsetMs === 0 ? query : { ...query, offsetMs } };
}

/**
 * A rolling window (docs/history.md#rolling-windows): from the start of the current minute back
 * `windowMs`, to the moment of the answer — so every request of a minute shares one edge copy.
 */
export function windowQuestion(windowMs: number, now: number): MarketQuestion {
  return { kind: "window", openTime: minuteOf(now) - windowMs };
}

/** The trading day holding `now` at the `timeZone` offset: its midnight to its last millisecond. */
export function tradingDayQuestion(offsetMs: number, now: number): MarketQuestion {
  const openTime = openTimeOf(now, "1d", offsetMs);
  return { kind: "window", openTime, closeTime: nextOpenTime(openTime, "1d", offsetMs) - 1 };
}

/** The trades question of a `limit` and any page bounds (docs/api.md#trade-history). */
export function tradesQuestion({ limit, ...page }: TradePage): MarketQuestion {
  return { kind: "trades", limit, page };
}

/** Each kind's last all-market answer, its records' texts by symbol: parsed once per refresh, not per request. */
const venueRecords = new Map<VenueRecordKind, { text: string; bySymbol: Map<string, string> }>();

function recordsOf(kind: VenueRecordKind, text: string): Map<string, string> {
  let held = venueRecords.get(kind);
  if (held?.text !== text) {
    const records = JSON.parse(text) as { symbol: string }[];
    held = { text, bySymbol: new Map(records.map((record) => [record.symbol, JSON.stringify(record)])) };
    venueRecords.set(kind, held);
  }
  return held.bySymbol;
}

/**
 * One question about many markets, answered as one array (docs/api.md#many-markets-in-one-call):
 * every market that is not delisted, in listing order, or those `symbols` names, in its order —
 * both from the price index's all-market answer (docs/api.md#all-markets): one object call per
 * refresh, whatever the number of markets (a market the answer does not hold yet, listed since,
 * is read from its own copy).
 */
export async function readMany(ctx: ReadContext, symbols: string | undefined, question: { kind: VenueRecordKind }): Promise<EdgeRead> {
  const asked = symbols === undefined ? undefined : resolveSymbolList(symbols);
  const venue = await readVenue(ctx, question.kind);
  if (!asked) return venue;
  const records = recordsOf(question.kind, venue.text);
  const reads = await Promise.all(
    asked.map((market) => {
      const text = records.get(market.symbol);
      return text === undefined ? readMarket(ctx, market, question) : { ...venue, text };
    }),
  );
  return combineReads(reads);
}

/**
 * The signed surface's one-or-many form: one record for `symbol`, else as {@link readMany}.
 * (The schema refuses `symbol` with `symbols`.)
 */
export function readOneOrMany(
  ctx: ReadContext,
  { symbol, symbols }: { symbol?: string; symbols?: string },
  question: { kind: VenueRecordKind },
): Promise<EdgeRead> {
  return symbol !== undefined ? readPair(ctx, symbol, question) : readMany(ctx, symbols, question);
}

/** The ticker as a record, for the pages (which render it rather than send it). */
export async function readTickerRecord(ctx: ReadContext, pair: string): Promise<TickerRecord> {
  return JSON.parse((await readPair(ctx, pair, { kind: "ticker" })).text) as TickerRecord;
}

/** Answers put together into one JSON array: it shows the oldest moment among them. */
export function combineReads(reads: EdgeRead[], wrap: (texts: string) => string = (texts) => `[${texts}]`): EdgeRead {
  return {
    text: wrap(reads.map((r) => r.text).join(",")),
    asOf: reads.length > 0 ? Math.min(...reads.map((r) => r.asOf)) : Date.now(),
    ageMs: Math.max(0, ...reads.map((r) => r.ageMs)),
    stale: reads.some((r) => r.stale),
  };
}

/**
 * Every market with its status, scales, rules and its feed's `lastUpdateTime`, the assets and the
 * limits: the price index's all-market answer (docs/api.md#all-markets). Delisted markets stay in
 * the list, marked DELISTED, so a client learns why a symbol went away.
 */
export function readMarkets(ctx: ReadContext): Promise<EdgeRead> {
  return readVenue(ctx, "markets");
}

/** The markets as records, for the pages. */
export function readMarketViews(): MarketView[] {
  return currentRegistry().listed.map(marketView);
}

/** Bounded: the assets list is the client's (docs/security.md#bounded-memory). */
const PRICE_ANSWERS_MAX_BYTES = 4 * 1024 * 1024;
/** Prices answered per question from the snapshot this isolate holds; emptied with each new snapshot. */
const priceAnswers = new BoundedMap<string>(PRICE_ANSWERS_MAX_BYTES, 256, textBytes, isolateCaches);
let answered: { snapshot: object; registry: RegistryIndex } | undefined;

export async function readPrices(ctx: ReadContext, { quote, assets }: { quote: string; assets?: string[] }): Promise<EdgeRead> {
  const snapshot = await readPriceSnapshot(ctx.env);
  const now = Date.now();
  if (!snapshot) return { text: JSON.stringify({ quote, asOf: null, data: [] }), asOf: now, ageMs: 0, stale: false };
  const registry = currentRegistry();
  if (answered?.snapshot !== snapshot || answered.registry !== registry) {
    priceAnswers.clear();
    answered = { snapshot, registry };
  }
  const question = `${quote}:${assets?.join(",") ?? "*"}`;
  let text = priceAnswers.get(question);
  if (text === undefined) {
    text = JSON.stringify({ quote, asOf: snapshot.asOf, data: pricesIn(registry, snapshot, quote, assets) });
    priceAnswers.set(question, text);
  }
  return { text, asOf: snapshot.asOf, ageMs: Math.max(0, now - snapshot.asOf), stale: false };
}
