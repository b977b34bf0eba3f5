/**
 * A market's minutes and days as the operator and the daily run change them (docs/history.md#import,
 * docs/history.md#daily-files), over the market's store and the state it holds in memory. The
 * market object calls these, writing alone; the daily files themselves are built off it.
 */
import { guarded, guardedAsync, type ProblemResult, problem } from "../core/problem";
import type { Kline, KlineQuery } from "../domain/candles";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import type { MinuteBucket } from "../domain/rolling-window";
import type { DayOpened, DayPage } from "../history/daily-files";
import type { MarketHistory } from "../history/market-history";
import { yieldTurn } from "../history/sliced-put";
import type { MarketStore } from "../writes/market-store";
import { type MarketState, TRADE_RETENTION_MS } from "./market-state";

/** A day's minutes read into its 1m klines a turn (`DayCalls.openDay`). */
const OPEN_DAY_SLICE_MS = 6 * HOUR_MS;

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

/** The kline intervals of a day, from the market's candles (`from`…`to` inclusive). */
type Candles = (interval: "1m" | "1h" | "1d", from: number, to: number) => Kline[];

/** What the daily files' calls use of a market's engine. */
interface DayHost {
  load(market: MarketConfig): MarketState;
  /** Commits what the host's tick has staged. */
  commitStaged(): void;
  store: MarketStore;
  history: MarketHistory;
  klines(state: MarketState, query: KlineQuery): Kline[];
}

/**
 * The calls a market's host answers for the daily files' Workflow
 * (docs/history.md#days-built-off-the-markets-host): which days a run hands on, the day as the
 * Workflow opens it, its trades a page at a time, and a day given up. Each is one bounded read or
 * one record write, guarded (a fault is the caller's problem answer); the files are built off
 * the host's thread.
 */
export class DayCalls {
  constructor(private readonly host: DayHost) {}

  /**
   * What a run for `day` hands to the Workflow: `day` if its candle counts a trade (`trades`), and
   * `again` the past days that took a late trade since they were last opened. Reads the day's
   * candle (its rollup: one row, where its 1,440 minutes were one turn of about 30 ms of the
   * host's thread); writes nothing.
   */
  daysToHand(market: MarketConfig, day: number): { trades: number; again: number[] } | ProblemResult {
    return guarded(() => {
      const state = this.host.load(market);
      const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
      const trades = this.candles(state)("1d", day, day + DAY_MS - 1).reduce((n, k) => n + k.tradeCount, 0);
      return { trades, again: state.dirtyDays.filter((d) => d !== day && d < today) };
    });
  }

  /**
   * The day as the Workflow will write it: in one turn its last trade id (what is staged committed
   * first, so every trade through it is stored) and its late-trade mark, cleared now, so a trade
   * that reaches the day after this marks it again for the next run; then its klines, a quarter of
   * the day's minutes a turn (a day's 1,440 in one turn were about 35 ms of the host's thread, the
   * group's commits waiting), and the trades they count. A late trade that lands between those
   * turns is marked for the next run; this run's candles may count it where its trades, read
   * through the id taken first, do not — the trades files are then skipped, never short.
   */
  async openDay(market: MarketConfig, day: number): Promise<DayOpened | ProblemResult> {
    return guardedAsync(async () => {
      this.host.commitStaged();
      const { store } = this.host;
      const opened = this.host.load(market);
      const throughSeq = opened.tradeSeq;
      if (opened.dirtyDays.includes(day)) {
        opened.dirtyDays = opened.dirtyDays.filter((d) => d !== day);
        store.writeRecord({ dirtyDays: JSON.stringify(opened.dirtyDays) });
      }
      const end = day + DAY_MS - 1;
      const minutes: Kline[] = [];
      for (let from = day; from <= end; from += OPEN_DAY_SLICE_MS) {
        await yieldTurn();
        minutes.push(...this.candles(this.host.load(market))("1m", from, Math.min(end, from + OPEN_DAY_SLICE_MS - 1)));
      }
      await yieldTurn();
      const candles = this.candles(this.host.load(market));
      const imported = new Set(
        store.candles
          .storedMinutes(day, end)
          .filter((m) => m.imported)
          .map((m) => m.minute),
      );
      return {
        throughSeq,
        klines: { "1m": minutes, "1h": candles("1h", day, end), "1d": candles("1d", day, end) },
        trades: minutes.reduce((n, k) => n + k.tradeCount, 0),
        live: minutes.reduce((n, k) => n + (imported.has(k.openTime) ? 0 : k.tradeCount), 0),
      };
    });
  }

  /** A page of the day's trades by trade id (`MarketHistory.dayPage`). */
  dayPage(market: MarketConfig, day: number, fromId: number, throughSeq: number): DayPage | ProblemResult {
    return guarded(() => {
      this.host.load(market);
      return this.host.history.dayPage(day, fromId, throughSeq);
    });
  }

  /** The Workflow gave the day up (after its rounds): marked again, so the next night's run hands it once more. */
  markDay(market: MarketConfig, day: number): boolean | ProblemResult {
    return guarded(() => {
      const state = this.host.load(market);
      if (state.dirtyDays.includes(day)) return false;
      state.dirtyDays = [...state.dirtyDays, day].sort((a, b) => a - b);
      this.host.store.writeRecord({ dirtyDays: JSON.stringify(state.dirtyDays) });
      return true;
    });
  }

  private candles(state: MarketState): Candles {
    return (interval, from, to) => this.host.klines(state, { interval, startTime: from, endTime: to, limit: 1_440 });
  }
}
