/**
 * A market's past brought in as one-minute candles (docs/history.md#import): Binance's kline
 * rows, as JSON arrays or as the public-data CSV, checked against the market's scales and turned
 * into minute buckets. Pure: the route reads the body, the market object writes the minutes.
 */
import { DecimalError, exactAtScale, parseDecimal } from "../core/decimal";
import { type FieldError, problem } from "../core/problem";
import { MINUTE_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import type { MinuteBucket } from "../domain/rolling-window";

/** Rows one request may carry: 50,000 minutes (about 35 days), some 8 MB of JSON. */
export const MAX_IMPORT_ROWS = 50_000;
export const IMPORT_MAX_BYTES = 8 * 1024 * 1024;

/** Binance's public-data files give times in microseconds from 2025 on: anything past this is µs. */
const MICROSECONDS_FROM = 100_000_000_000_000;
const NAMES = ["openTime", "open", "high", "low", "close", "volume", "closeTime", "quoteVolume", "count", "takerBuyVolume", "takerBuyQuoteVolume"];

export interface ImportedMinutes {
  /** Minute buckets with trades, ascending. */
  minutes: MinuteBucket[];
  /** Rows without trades (Binance's flat fillers): the service keeps no empty candle. */
  skipped: number;
}

/** A field that is not what the row needs: 400 naming the row, the field and the rule. */
class RowError extends Error {
  constructor(
    readonly field: number,
    message: string,
  ) {
    super(message);
  }
}

/** Milliseconds from a row's time, whichever unit the file used. */
function millis(value: unknown, field: number): number {
  const number = typeof value === "string" && /^\d{1,17}$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0)
    throw new RowError(field, "an integer time (ms, or µs as in newer public-data files)");
  return number >= MICROSECONDS_FROM ? Math.floor(number / 1000) : number;
}

function units(value: unknown, field: number, scale: number): bigint {
  if (typeof value !== "string") throw new RowError(field, "a decimal string");
  let exact: bigint | null;
  try {
    exact = exactAtScale(parseDecimal(value), scale);
  } catch (error) {
    if (error instanceof DecimalError) throw new RowError(field, "a plain decimal");
    throw error;
  }
  if (exact === null) throw new RowError(field, `at most ${scale} decimals (the market's scale)`);
  if (exact < 0n) throw new RowError(field, "not negative");
  return exact;
}

function count(value: unknown, field: number): number {
  const number = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0) throw new RowError(field, "a trade count: an integer ≥ 0");
  return number;
}

/** One row as a minute bucket, or undefined for a row without trades. */
function minuteOf(row: unknown, market: MarketConfig, now: number): MinuteBucket | undefined {
  if (!Array.isArray(row) || row.length < 11 || row.length > 12) throw new RowError(-1, "a kline row of 11 fields (a 12th is ignored)");
  const openTime = millis(row[0], 0);
  if (openTime % MINUTE_MS !== 0) throw new RowError(0, "the start of a minute");
  if (openTime > now) throw new RowError(0, "not in the future");
  const closeTime = millis(row[6], 6);
  if (closeTime !== openTime + MINUTE_MS - 1) throw new RowError(6, "openTime + 59,999 ms: only 1m rows are imported");
  const { priceScale, quantityScale } = market;
  const [open, high, low, close] = [1, 2, 3, 4].map((field) => units(row[field], field, priceScale)) as [bigint, bigint, bigint, bigint];
  const volume = units(row[5], 5, quantityScale);
  const quoteVolume = units(row[7], 7, priceScale + quantityScale);
  const trades = count(row[8], 8);
  const takerBuyVolume = units(row[9], 9, quantityScale);
  const takerBuyQuoteVolume = units(row[10], 10, priceScale + quantityScale);
  if (trades === 0) {
    if (volume !== 0n) throw new RowError(8, "at least 1 when the volume is not 0");
    return undefined;
  }
  if (low === 0n) throw new RowError(3, "a price above 0");
  if (high < open || high < close || high < low) throw new RowError(2, "the highest of open, high, low and close");
  if (low > open || low > close) throw new RowError(3, "the lowest of open, high, low and close");
  if (takerBuyVolume > volume) throw new RowError(9, "at most the volume");
  if (takerBuyQuoteVolume > quoteVolume) throw new RowError(10, "at most the quote volume");
  return {
    minute: openTime,
    open,
    high,
    low,
    close,
    // What the row cannot say: its trades' times. The whole minute: a live trade never reorders it.
    firstTradeTime: openTime,
    lastTradeTime: closeTime,
    volume,
    quoteVolume,
    takerBuyVolume,
    takerBuyQuoteVolume,
    count: trades,
  };
}

/**
 * Checks every row and makes the minutes; the first bad row refuses the whole request (400,
 * `rows.{i}.{field}`), and so does a minute given twice. `now` bounds the future.
 */
export function importedMinutes(rows: readonly unknown[], market: MarketConfig, now: number): ImportedMinutes {
  const minutes: MinuteBucket[] = [];
  const seen = new Set<number>();
  let skipped = 0;
  for (let i = 0; i < rows.length; i++) {
    let minute: MinuteBucket | undefined;
    try {
      minute = minuteOf(rows[i], market, now);
      const openTime = millis((rows[i] as unknown[])[0], 0);
      if (seen.has(openTime)) throw new RowError(0, "a minute given once: this one came before");
      seen.add(openTime);
    } catch (error) {
      if (!(error instanceof RowError)) throw error;
      const path = error.field < 0 ? `rows.${i}` : `rows.${i}.${error.field}`;
      const name = error.field < 0 ? "row" : NAMES[error.field];
      const errors: FieldError[] = [{ path, message: `${name} must be ${error.message}` }];
      throw problem("VALIDATION_FAILED", `row ${i} of the import is refused (${name}), and with it the whole request: nothing was imported`, { errors });
    }
    if (minute) minutes.push(minute);
    else skipped += 1;
  }
  minutes.sort((a, b) => a.minute - b.minute);
  return { minutes, skipped };
}

/**
 * Binance's public-data kline CSV: one row per line, the 12 columns, with or without a header
 * line (with or without a byte-order mark). Fields stay text; `importedMinutes` checks them.
 */
export function csvRows(text: string): string[][] {
  // A byte-order mark and spaces around a line are not data; a blank line is skipped.
  const lines = text
    .replace(/^\uFEFF/, "")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  // Only a line whose first field is a name is a header (open_time,open,…): any other line is a
  // row, checked like the rest, so nothing is dropped unseen.
  if (lines.length > 0 && /^[A-Za-z_][A-Za-z_ ]*(,|$)/.test(lines[0]!)) lines.shift();
  return lines.map((line) => line.split(",").map((field) => field.trim()));
}
