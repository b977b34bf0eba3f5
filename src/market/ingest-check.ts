import { DecimalError, exactAtScale, parseDecimal } from "../core/decimal";
import { type FieldError, ProblemError, problem } from "../core/problem";
import type { MarketConfig } from "../domain/market-config";
import type { BookUpdate, UnitLevel } from "../domain/order-book";
import type { IngestBody } from "./schemas";

/** A trade ready for its MarketObject: integer units at the market's scales. */
export interface UnitTradeInput {
  id: string;
  price: bigint;
  quantity: bigint;
  side: "buy" | "sell";
  time: number;
}

export interface IngestBatch {
  trades: UnitTradeInput[];
  /** The batch's book updates, in the order to apply them (one or more). */
  book?: BookUpdate[];
}

const MAX_ERRORS_NAMED = 100;

/** Trades may be late (a publisher catching up) but not from the future or from long ago. */
const MAX_TRADE_FUTURE_MS = 5_000;
export const MAX_TRADE_AGE_MS = 7 * 86_400_000;

/** A market's trading rules in integer units: prices and quantities at its scales, notional at both. */
interface RuleUnits {
  tick: bigint;
  step: bigint;
  minQty: bigint;
  maxQty: bigint;
  minNotional: bigint;
}

const ruleUnitsCache = new WeakMap<MarketConfig, RuleUnits>();

function ruleUnits(market: MarketConfig): RuleUnits {
  let units = ruleUnitsCache.get(market);
  if (!units) {
    const at = (text: string, scale: number) => exactAtScale(parseDecimal(text), scale)!;
    const { rules, priceScale, quantityScale } = market;
    units = {
      tick: at(rules.tickSize, priceScale),
      step: at(rules.stepSize, quantityScale),
      minQty: at(rules.minQty, quantityScale),
      maxQty: at(rules.maxQty, quantityScale),
      minNotional: at(rules.minNotional, priceScale + quantityScale),
    };
    ruleUnitsCache.set(market, units);
  }
  return units;
}

/**
 * Checks a validated ingest body against its market's scales and trading rules (docs/publishing.md)
 * and turns every decimal into integer units, once: at the edge for `POST /v1/ingest`, at the
 * market's host for a publisher channel's batches. Collects every failure (400 `VALIDATION_FAILED`
 * with `errors`) instead of stopping at the first.
 */
export function toIngestBatch(market: MarketConfig, body: IngestBody, now: number): IngestBatch {
  const errors: FieldError[] = [];
  const units = (text: string, scale: number, path: string, allowZero: boolean): bigint => {
    let value: bigint | null = null;
    try {
      value = exactAtScale(parseDecimal(text), scale);
    } catch (error) {
      if (!(error instanceof DecimalError)) throw error;
    }
    if (value === null) errors.push({ path, message: `has more than ${scale} decimals` });
    else if (value < 0n || (value === 0n && !allowZero)) errors.push({ path, message: allowZero ? "cannot be negative" : "must be positive" });
    return value ?? 0n;
  };

  const rules = ruleUnits(market);
  const price = (text: string, path: string): bigint => {
    const value = units(text, market.priceScale, path, false);
    if (value > 0n && value % rules.tick !== 0n) errors.push({ path, message: `is not a multiple of the tick size ${market.rules.tickSize}` });
    return value;
  };
  const quantity = (text: string, path: string, zeroRemoves: boolean): bigint => {
    const value = units(text, market.quantityScale, path, zeroRemoves);
    if (value === 0n) return value;
    if (value % rules.step !== 0n) errors.push({ path, message: `is not a multiple of the step size ${market.rules.stepSize}` });
    if (value > 0n && value < rules.minQty) errors.push({ path, message: `is below minQty ${market.rules.minQty}` });
    if (value > rules.maxQty) errors.push({ path, message: `is above maxQty ${market.rules.maxQty}` });
    return value;
  };

  const trades = (body.trades ?? []).map((trade, i) => {
    if (trade.time > now + MAX_TRADE_FUTURE_MS) errors.push({ path: `trades.${i}.time`, message: "is in the future" });
    if (trade.time < now - MAX_TRADE_AGE_MS) errors.push({ path: `trades.${i}.time`, message: "is more than 7 days old" });
    const unit = { price: price(trade.price, `trades.${i}.price`), quantity: quantity(trade.quantity, `trades.${i}.quantity`, false) };
    if (unit.price > 0n && unit.quantity > 0n && unit.price * unit.quantity < rules.minNotional) {
      errors.push({ path: `trades.${i}.quantity`, message: `price × quantity is below minNotional ${market.rules.minNotional} ${market.quote}` });
    }
    return { id: trade.id, ...unit, side: trade.side, time: trade.time };
  });

  let book: BookUpdate[] | undefined;
  if (body.book) {
    const many = Array.isArray(body.book);
    const updates = Array.isArray(body.book) ? body.book : [body.book];
    book = updates.map((update, u) => {
      const at = many ? `book.${u}.` : "book.";
      // In a delta, quantity "0" removes a level; a snapshot holds only positive quantities.
      const zeroRemoves = update.type === "delta";
      const levels = (side: "bids" | "asks"): UnitLevel[] =>
        update[side].map(([levelPrice, levelQuantity], i) => [
          price(levelPrice, `${at}${side}.${i}.0`),
          quantity(levelQuantity, `${at}${side}.${i}.1`, zeroRemoves),
        ]);
      return { type: update.type, sequence: update.sequence, bids: levels("bids"), asks: levels("asks") };
    });
  }

  if (errors.length > 0) {
    // A batch of a thousand updates can fail everywhere: the first hundred failures are named.
    throw problem("VALIDATION_FAILED", `the ${market.symbol} batch does not fit the market's scales and trading rules (GET /api/markets)`, {
      errors: errors.slice(0, MAX_ERRORS_NAMED),
      ...(errors.length > MAX_ERRORS_NAMED ? { errorCount: errors.length } : {}),
    });
  }
  return { trades, ...(book ? { book } : {}) };
}

/** A batch to be checked by its host against the market's config as held there (the newest). */
export type CheckAtHost = (held: MarketConfig) => IngestBatch;

/**
 * `toIngestBatch` for a body a publisher channel forwarded (its shape checked there): a body that is
 * not of that shape is refused (`VALIDATION_FAILED`), never taken for the market's own failure.
 */
export function checkedAtHost(market: MarketConfig, body: IngestBody): IngestBatch {
  try {
    return toIngestBatch(market, body, Date.now());
  } catch (error) {
    if (error instanceof ProblemError) throw error;
    throw problem("VALIDATION_FAILED", "the batch did not reach its market whole; it was not applied — send it again");
  }
}
