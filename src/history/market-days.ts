/**
 * A market's minutes and days as the operator and the daily run change them (docs/history.md#import,
 * docs/history.md#daily-files), over the market's store and the state it holds in memory. The
 * market object calls these, writing alone.
 */
import { problem } from "../core/problem";
import { type MarketState, TRADE_RETENTION_MS } from "../market/market-state";
import type { MarketStore } from "../market/market-store";
import type { MinuteBucket } from "../market/rolling-window";
import type { Kline } from "./candles";
import { DAY_MS, MINUTE_MS } from "./intervals";
import type { DayFiles, MarketHistory } from "./market-history";

/**
 * Brings in a market's past as minutes, all or nothing: a minute that holds live trades is refused
 * (409 naming it), an imported one is replaced. The hours and days over the imported span are built
 * again from the minutes, so every coarser candle and window sees them exactly as it sees live
 * ones. The staged buckets must be written first (the caller does).
 */
export function importMinutes(store: MarketStore, state: MarketState, minutes: MinuteBucket[]): { imported: number; replaced: number } {
  if (minutes.length === 0) return { imported: 0, replaced: 0 };
  const from = minutes[0]!.minute;
  const to = minutes[minutes.length - 1]!.minute;
  const asked = new Set(minutes.map((m) => m.minute));
  const stored = store.candles.storedMinutes(from, to).filter((m) => asked.has(m.minute));
  const live = stored.filter((m) => m.imported === 0).map((m) => m.minute);
  if (live.length > 0) {
    const at = new Date(live[0]!).toISOString();
    throw problem("LIVE_MINUTE", `the minute at ${at} (${live[0]}) holds live trades: an import never replaces them, and nothing was imported`, {
      errors: [{ path: `rows.${minutes.findIndex((m) => m.minute === live[0])}`, message: `${at} holds live trades` }],
      minutes: live.slice(0, 100),
    });
  }
  store.transaction(() => {
    for (const minute of minutes) store.candles.upsertBucket(minute, MINUTE_MS, true);
    store.candles.rebuildRollups(from, to);
  });
  // What memory holds of the recent past and the last price follows the stored minutes.
  const now = Date.now();
  state.recentBuckets = [...store.candles.buckets(MINUTE_MS, now - TRADE_RETENTION_MS, Number.MAX_SAFE_INTEGER, "ASC")];
  const latest = store.candles.latestBucket();
  if (latest && latest.lastTradeTime > state.lastTradeTime) {
    state.lastTradeTime = latest.lastTradeTime;
    state.lastTradePrice = latest.close;
    state.lastTradeQty = 0n; // an imported minute says nothing of its last trade's quantity
  }
  state.version += 1;
  return { imported: minutes.length, replaced: stored.length };
}

/**
 * One UTC day's files, and again the files of past days that took a late trade since they were
 * written; the days written are unmarked unless one was marked meanwhile. A failure leaves the day
 * marked, so a later run writes it.
 */
export async function writeDays(
  history: MarketHistory,
  store: MarketStore,
  state: MarketState,
  day: number,
  candles: (interval: "1m" | "1h" | "1d", from: number, to: number) => Kline[],
): Promise<DayFiles> {
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  try {
    const marks = state.dirtyMarks;
    const again = state.dirtyDays.filter((d) => d !== day && d < today);
    const result = await history.writeDay(state.market, day, candles);
    for (const past of again) await history.writeDay(state.market, past, candles);
    if (again.length > 0) result.rewritten = again.map((d) => new Date(d).toISOString().slice(0, 10));
    // Cleared only if no day was marked meanwhile: else all are written again next time (the same bytes where nothing changed).
    if (state.dirtyMarks === marks && state.dirtyDays.length > 0) {
      const written = new Set([day, ...again]);
      state.dirtyDays = state.dirtyDays.filter((d) => !written.has(d));
      store.writeRecord({ dirtyDays: JSON.stringify(state.dirtyDays) });
    }
    return result;
  } catch (error) {
    // Not written (an R2 fault, a chunk not readable): the day stays marked, so a later run writes it.
    if (!state.dirtyDays.includes(day) && day < today) {
      state.dirtyDays = [...state.dirtyDays, day].sort((a, b) => a - b);
      state.dirtyMarks += 1;
      store.writeRecord({ dirtyDays: JSON.stringify(state.dirtyDays) });
    }
    throw error;
  }
}
