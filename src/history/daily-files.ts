/**
 * A market's day as files in Binance's public-data layout (docs/history.md#daily-files): the
 * names, the R2 keys, the CSV rows and what the host and the Workflow that writes them say to each
 * other. Pure; the `daily-files` Workflow builds the files from what the host hands it.
 */
import { formatDigits, productText } from "../core/decimal";
import type { Kline } from "../domain/candles";
import { DAY_MS, MINUTE_MS } from "../domain/intervals";
import type { PackedTrade } from "../writes/trade-blocks";
import type { ArchivedTrade } from "./trade-archive";

/** The kline intervals written as daily files. */
export const DAILY_KLINE_INTERVALS = ["1m", "1h", "1d"] as const;

/**
 * A day's trades and aggTrades zips (and their checksums) are kept this long in R2 (a lifecycle rule,
 * docs/operations.md), then built again from the trade archive's chunks, kept for ever, when asked
 * (docs/history.md#daily-files): they were two thirds of the history's bytes. Its klines files stay.
 */
export const DAILY_TRADE_FILES_KEPT_DAYS = 30;

/** Trades are accepted up to 7 days late (MAX_TRADE_AGE_MS in market/ingest-check.ts, docs/publishing.md). */
const LATE_TRADES_MS = 7 * DAY_MS;
/** The daily run's minute after midnight UTC (DAILY_FILES_MINUTE, archive-days.ts). */
const RUN_AFTER_MS = 5 * MINUTE_MS;

/**
 * Whether a day's file can change no more: it was written by the run after the last moment a late
 * trade could reach the day (its last millisecond, 7 days late), so it holds every trade the day
 * will ever have. A file written before that — even if served long after — may still be rewritten.
 */
export function fileIsFinal(day: number, uploadedAt: number): boolean {
  return uploadedAt >= day + DAY_MS + LATE_TRADES_MS + RUN_AFTER_MS;
}
/** What writing one day's files did (`POST /admin/archive`, the daily cron): a Workflow instance's output. */
export interface DayFiles {
  symbol: string;
  date: string;
  trades: number;
  files: { key: string; bytes: number; sha256: string }[];
  /** Why the trades files were not written, when they were not. */
  skipped?: string;
  /** Past days handed again because late trades reached them (YYYY-MM-DD). */
  rewritten?: string[];
  /** Why the market's files were not written in this run (they are at the next). */
  failed?: string;
  /** What the day cost its host: calls (the open and each page) and the bytes of hot blocks they copied. */
  host?: { calls: number; bytes: number };
  /** The Workflow instance writing the day, and whether it was still at work when answered. */
  instance?: string;
  pending?: boolean;
}

/** The day as its host holds it when the Workflow opens it: its last trade id, its klines, and the trades they count. */
export interface DayOpened {
  throughSeq: number;
  klines: Record<(typeof DAILY_KLINE_INTERVALS)[number], Kline[]>;
  /** Trades the day's minutes count, and of them the live ones (an imported minute counts trades it has not). */
  trades: number;
  live: number;
}

/**
 * A page of the day's trades (`MarketHistory.dayPage`): archived chunks to read from R2, or the
 * host's hot blocks as stored (JSON arrays of packed trades, unfiltered) and its open block's
 * trades; where the next page starts.
 */
export interface DayPage {
  chunks: number[];
  blocks: string[];
  open: PackedTrade[];
  next: number;
}

export type DailyKind = "trades" | "aggTrades" | `klines/${(typeof DAILY_KLINE_INTERVALS)[number]}`;

/** A UTC day as `YYYY-MM-DD`, or undefined when the text is not a real date. */
export function parseDay(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const start = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(start) || new Date(start).toISOString().slice(0, 10) !== text ? undefined : start;
}

export function dayName(start: number): string {
  return new Date(start).toISOString().slice(0, 10);
}

/** `data/spot/daily/trades/BTCUSDT/BTCUSDT-trades-2026-11-23.zip` and its klines and aggTrades siblings. */
export function dailyKey(kind: DailyKind, symbol: string, day: number): string {
  const date = dayName(day);
  if (kind === "trades" || kind === "aggTrades") return `data/spot/daily/${kind}/${symbol}/${symbol}-${kind}-${date}.zip`;
  const interval = kind.slice("klines/".length);
  return `data/spot/daily/klines/${symbol}/${interval}/${symbol}-${interval}-${date}.zip`;
}

/** The CSV inside a zip has the zip's name with `.csv`. */
export function csvName(key: string): string {
  return key.slice(key.lastIndexOf("/") + 1).replace(/\.zip$/, ".csv");
}

/** Binance's booleans in its files. */
const bool = (value: boolean) => (value ? "True" : "False");

/**
 * A host's packed trade as a file's row needs it — what `wireTrade(market, unpack(row))` gives —
 * with no bigint: the units' digits are placed at the market's scales (a day is 200,000 of them).
 */
export function packedWireTrade(scales: { priceScale: number; quantityScale: number }, row: PackedTrade): ArchivedTrade {
  const [id, seq, price, quantity, buy, time] = row;
  return {
    tradeId: seq,
    id,
    price: formatDigits(price, scales.priceScale),
    quantity: formatDigits(quantity, scales.quantityScale),
    side: buy === 1 ? "buy" : "sell",
    time,
  };
}

/**
 * `id,price,qty,quoteQty,time,isBuyerMaker,isBestMatch` per trade, in trade id order, no header
 * (as Binance's files). The buyer was the maker when the taker sold.
 */
export function tradesCsv(trades: readonly ArchivedTrade[]): string {
  return trades.map((t) => `${t.tradeId},${t.price},${t.quantity},${productText(t.price, t.quantity)},${t.time},${bool(t.side === "sell")},True\n`).join("");
}

/** `a,p,q,f,l,T,m,M`: each trade is its own aggregate here (docs/binance.md#aggregate-trades). */
export function aggTradesCsv(trades: readonly ArchivedTrade[]): string {
  return trades.map((t) => `${t.tradeId},${t.price},${t.quantity},${t.tradeId},${t.tradeId},${t.time},${bool(t.side === "sell")},True\n`).join("");
}

/** Binance's 12 kline columns, the last (`ignore`) 0. */
export function klinesCsv(candles: readonly Kline[]): string {
  return candles
    .map(
      (k) =>
        `${k.openTime},${k.open},${k.high},${k.low},${k.close},${k.volume},${k.closeTime},${k.quoteVolume},${k.tradeCount},${k.takerBuyVolume},${k.takerBuyQuoteVolume},0\n`,
    )
    .join("");
}
