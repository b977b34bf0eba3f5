import type { BookOutcome, BookUpdate, UnitLevel } from "../domain/order-book";
import type { StoredTrade } from "../domain/trades";
import type { BookEntry } from "../writes/book-entries";
import type { MarketRecord, MarketStore } from "../writes/market-store";
import { tradeBytes } from "../writes/trade-blocks";
import { rememberTrades, takeTrades } from "./batch-trades";
import type { IngestResult } from "./ingest";
import type { IngestBatch } from "./ingest-check";
import type { MarketState } from "./market-state";

/**
 * What a market applied since its last commit and has not written yet (docs/design.md#the-write-path):
 * the batches' book entries and their trades (one row of the book log for all), the record's
 * fields they changed, and about how large that row will be.
 */
export class StagedBatches {
  readonly entries: BookEntry[] = [];
  readonly trades: StoredTrade[] = [];
  readonly record: Partial<MarketRecord> = {};
  /** Whether a batch changed the market (its summary is due). */
  changed = false;
  /** The batches staged (each waits for the commit). */
  batches = 0;
}

/** A level's bytes in a journal row: its two numbers, their quotes escaped, brackets and commas. */
const levelBytes = (sum: number, [price, quantity]: UnitLevel) => sum + price.toString().length + quantity.toString().length + 12;

/**
 * At most the bytes a batch adds to its commit's journal row: its levels and its trades
 * (`tradeBytes`), as the log encodes them — whatever the ids and the scales, so a commit held to
 * COMMIT_MAX_BYTES is a row within Cloudflare's 2 MB.
 */
export function batchBytes(batch: IngestBatch): number {
  let bytes = 0;
  for (const update of batch.book ?? []) bytes += 32 + update.bids.reduce(levelBytes, 0) + update.asks.reduce(levelBytes, 0);
  return bytes + batch.trades.reduce((sum, trade) => sum + tradeBytes(trade), 0);
}

/**
 * Applies one validated batch in memory — book first, all or nothing, then trades — and stages
 * what it must write; nothing is written here. The market is as if the batch were applied (a
 * later batch of the same tick builds on it); its answer goes out once the tick is committed.
 */
export function stageBatch(
  store: MarketStore,
  state: MarketState,
  staged: StagedBatches,
  batch: IngestBatch,
  now: number,
): { result: IngestResult; streamed: { book: readonly BookUpdate[] | undefined; trades: StoredTrade[] } } {
  const sequenceBefore = state.book.sequence;
  // Validates before it changes anything; an identical replay changes nothing at all.
  const bookOutcome: BookOutcome | undefined = batch.book ? state.book.applyAll(batch.book, now) : undefined;
  const bookApplied = bookOutcome === "applied";
  if (batch.book && bookApplied) {
    // The updates the book did not have already (a resend may overlap), as sent: the book's history.
    staged.entries.push({ time: now, updates: batch.book.filter((u) => u.sequence > sequenceBefore), fingerprint: state.book.lastFingerprint });
  }
  const taken = takeTrades(store, batch.trades, state.tradeSeq, now);
  staged.trades.push(...taken.accepted);
  // A trade of a day already over: that day's files are written again at the next run. The mark
  // is cleared when the day's Workflow opens it, in one turn with its last trade id: a late trade
  // after that marks it again.
  const late = taken.lateDays.filter((day) => !state.dirtyDays.includes(day));
  if (late.length > 0) {
    state.dirtyDays = [...state.dirtyDays, ...late].sort((a, b) => a - b);
    staged.record.dirtyDays = JSON.stringify(state.dirtyDays);
  }
  rememberTrades(state, taken, now);
  const acceptedTrades = taken.accepted.length;
  if (acceptedTrades > 0 || bookApplied) {
    state.lastUpdateAt = now;
    staged.changed = true;
  }
  state.version += 1;
  return {
    result: {
      symbol: state.market.symbol,
      acceptedTrades,
      duplicateTrades: taken.duplicates,
      sequence: state.book.sequence,
      ...(bookOutcome ? { book: bookOutcome } : {}),
    },
    // What its stream subscribers get: sent as it is applied, with the book it leaves (their checksums are of it).
    streamed: { book: bookApplied ? batch.book : undefined, trades: taken.accepted },
  };
}
