import { DECIMAL_PATTERN } from "../core/decimal";
import { MAX_DECIMAL_CHARS, MAX_TIMESTAMP_MS } from "../core/schemas";
import { MAX_LEVELS_PER_SIDE } from "../domain/order-book";
import type { WireTrade } from "../domain/wire-trade";
import { MAX_BOOK_UPDATES_PER_BATCH, MAX_ID_CHARS, MAX_TRADES_PER_BATCH } from "../market/schemas";

/**
 * A publisher channel's quick look at one batch: the shape `PublishMessageSchema` (zod, the one
 * source of the shape and its OpenAPI) would accept, built as zod would build it — or undefined,
 * and then zod decides and names the errors. It only ever says yes where zod would (a property
 * test holds it to that), never no in zod's place, so the answers are zod's either way.
 *
 * Why: workerd forbids `new Function`, so zod interprets each object's shape; at a venue's 20,000
 * batches a second on one connection that interpretation was about a fifth of the channel's CPU
 * (docs/benchmarks.md#one-channel).
 *
 * @example
 * const body = quickBatch(JSON.parse(text)) ?? PublishMessageSchema.parse(value);
 */
export function quickBatch(value: unknown): QuickBatch | undefined {
  if (!isRecord(value)) return undefined;
  const { id, symbol, trades, book } = value;
  if (!(isBoundedString(id, MAX_ID_CHARS) || (typeof id === "number" && Number.isSafeInteger(id)))) return undefined;
  if (!isBoundedString(symbol, MAX_ID_CHARS)) return undefined;
  const batch: QuickBatch = { id, symbol };
  if (trades !== undefined) {
    const checked = quickTrades(trades);
    if (!checked) return undefined;
    batch.trades = checked;
  }
  if (book !== undefined) {
    const checked = Array.isArray(book) ? quickUpdates(book) : quickUpdate(book);
    if (!checked) return undefined;
    batch.book = checked;
  }
  return batch;
}

/** A batch as zod answers it: the ingest body's fields with the client's id. */
export interface QuickBatch {
  id: string | number;
  symbol: string;
  trades?: QuickTrade[];
  book?: QuickUpdate | QuickUpdate[];
}

type QuickTrade = Omit<WireTrade, "tradeId">;

interface QuickUpdate {
  type: "snapshot" | "delta";
  sequence: number;
  bids: [string, string][];
  asks: [string, string][];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isBoundedString(value: unknown, max: number): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= max;
}

function isDecimal(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_DECIMAL_CHARS && DECIMAL_PATTERN.test(value);
}

function quickTrades(value: unknown): QuickTrade[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_TRADES_PER_BATCH) return undefined;
  const trades: QuickTrade[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const trade = value[i];
    if (!isRecord(trade)) return undefined;
    const { id, price, quantity, side, time } = trade;
    if (!isBoundedString(id, MAX_ID_CHARS) || !isDecimal(price) || !isDecimal(quantity)) return undefined;
    if (side !== "buy" && side !== "sell") return undefined;
    if (typeof time !== "number" || !Number.isSafeInteger(time) || time < 0 || time > MAX_TIMESTAMP_MS) return undefined;
    trades[i] = { id, price, quantity, side, time };
  }
  return trades;
}

function quickUpdates(value: unknown[]): QuickUpdate[] | undefined {
  if (value.length < 1 || value.length > MAX_BOOK_UPDATES_PER_BATCH) return undefined;
  const updates: QuickUpdate[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const update = quickUpdate(value[i]);
    if (!update) return undefined;
    updates[i] = update;
  }
  return updates;
}

function quickUpdate(value: unknown): QuickUpdate | undefined {
  if (!isRecord(value)) return undefined;
  const { type, sequence, bids, asks } = value;
  if (type !== "snapshot" && type !== "delta") return undefined;
  if (typeof sequence !== "number" || !Number.isSafeInteger(sequence) || sequence < 1) return undefined;
  const bidLevels = quickLevels(bids);
  const askLevels = bidLevels && quickLevels(asks);
  if (!bidLevels || !askLevels) return undefined;
  return { type, sequence, bids: bidLevels, asks: askLevels };
}

function quickLevels(value: unknown): [string, string][] | undefined {
  if (!Array.isArray(value) || value.length > MAX_LEVELS_PER_SIDE) return undefined;
  const levels: [string, string][] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const level = value[i];
    if (!Array.isArray(level) || level.length !== 2) return undefined;
    const price = level[0];
    const quantity = level[1];
    if (!isDecimal(price) || !isDecimal(quantity)) return undefined;
    levels[i] = [price, quantity];
  }
  return levels;
}
