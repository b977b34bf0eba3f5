import type { Context } from "hono";
import { BoundedMap, isolateCaches, textBytes } from "../core/bounded-map";
import type { MarketQuestion } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import { type EdgeRead, readMarket, readVenue } from "../reads/edge-reads";
import { combineReads, readContext, sendRead } from "../reads/reads";
import { missingParameter } from "./errors";
import { marketOf, marketsAsked } from "./params";

/**
 * How the dialect's routes read and answer (docs/binance.md): one market, some or every one from
 * the edge copies, and each answer translated once while its copy stays the same.
 */

/** What the translations may hold at most (docs/security.md#bounded-memory). */
export const TRANSLATIONS_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Translations made, per route and validated parameters (a parameter the route does not read is
 * refused before, `onlyParams`), with the answer each was made from: while a copy stays the same (the
 * all-market answers for up to a second, 2,000 markets of them) every request for it is handed the
 * same text instead of parsing and rebuilding it. Bounded in bytes (docs/security.md#bounded-memory).
 */
export const translations = new BoundedMap<{ source: string; text: string }>(
  TRANSLATIONS_MAX_BYTES,
  1_024,
  (key, made) => textBytes(key, made.text),
  isolateCaches,
);

/** The key of a translation: the route and its parameters as validated, never the raw URL. */
function translationKey(c: Context<AppEnv>): string {
  return `${c.req.routePath}?${JSON.stringify(c.req.valid("query" as never) ?? null)}`;
}

/** A read's answer, translated, with the read's freshness headers (docs/edge-reads.md); `fresh` when it depends on more than the answer. */
export function sendAs<T>(c: Context<AppEnv>, read: EdgeRead, translate: (value: never) => unknown, fresh = false) {
  const key = fresh ? "" : translationKey(c);
  const made = fresh ? undefined : translations.get(key);
  if (made?.source === read.text) return sendRead<T>(c, { ...read, text: made.text });
  const text = JSON.stringify(translate(JSON.parse(read.text) as never));
  if (!fresh) translations.set(key, { source: read.text, text });
  return sendRead<T>(c, { ...read, text });
}

/**
 * One question about one market, or the all-market answer: the markets `symbols` asks for are
 * picked from it (`eachRecord`'s `only`), one read however many, never a read per market.
 */
export async function readRecords(c: Context<AppEnv>, asked: { one?: MarketConfig }, kind: "ticker" | "bookTicker"): Promise<EdgeRead> {
  return asked.one ? readMarket(readContext(c), asked.one, { kind }) : readVenue(readContext(c), kind);
}

/**
 * Translates a record or an array of records, each with its market (for the scales of a zero);
 * with `only`, the array's records of those markets, in that order.
 */
export function eachRecord<R extends { symbol: string }>(translate: (record: R, market: MarketConfig) => unknown, only?: readonly MarketConfig[]) {
  const one = (record: R) => translate(record, marketOf(record.symbol));
  const pick = (records: R[]) => {
    if (!only) return records;
    const bySymbol = new Map(records.map((r) => [r.symbol, r]));
    return only.flatMap((m) => bySymbol.get(m.symbol) ?? []);
  };
  return (value: R | R[]) => (Array.isArray(value) ? pick(value).map(one) : one(value));
}

/** A window question about the market `symbol` names or the markets `symbols` names; one of them is required (`symbolStatus` alone is none). */
export async function readWindows(
  c: Context<AppEnv>,
  query: { symbol?: string; symbols?: string; symbolStatus?: string },
  question: MarketQuestion,
  most?: number,
): Promise<EdgeRead> {
  if (query.symbol === undefined && query.symbols === undefined) throw missingParameter("symbol");
  const asked = marketsAsked(query, most);
  const ctx = readContext(c);
  if (asked.one) return readMarket(ctx, asked.one, question);
  return combineReads(await Promise.all((asked.many ?? []).map((m) => readMarket(ctx, m, question))));
}

export function readOne(c: Context<AppEnv>, market: MarketConfig, question: MarketQuestion): Promise<EdgeRead> {
  return readMarket(readContext(c), market, question);
}
