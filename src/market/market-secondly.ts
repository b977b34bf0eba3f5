import { formatUnits } from "../core/decimal";
import { changePercent, minuteOf } from "../domain/rolling-window";
import type { RelayOp } from "../groups/messages";
import type { MarketStorage } from "../writes/market-storage";
import { bookTickerOf, type MarketState, tickerAt, tickerOf, windowRecordsOf } from "./market-state";
import type { MarketStreams } from "./market-streams";
import type { PriceReport } from "./price-index";

/** The price index and ticker subscribers hear from a market at most this often (KV takes one write a second). */
const SECONDLY_MS = 1_000;

/** The market's price summary for the price index, or undefined before its first trade. */
function priceReport(state: MarketState, now: number): PriceReport | undefined {
  if (state.lastTradePrice === undefined) return undefined;
  const { stats } = tickerOf(state, now);
  const { symbol, priceScale } = state.market;
  return {
    symbol,
    status: state.market.status,
    lastPrice: formatUnits(stats.lastPrice, priceScale),
    openPrice: formatUnits(stats.openPrice, priceScale),
    changePercent24h: changePercent(stats.lastPrice, stats.openPrice),
    updatedAt: state.lastTradeTime,
  };
}

/**
 * A market's once-a-second duties and its one alarm: the group relay gets the market's summary
 * (its ticker, rolling windows, top of the book and price, for the all-market answers, the price
 * index and `tickers[.{window}]`), and the market's subscribers its once-a-second records
 * (docs/streams.md). A summary held back goes out on a timer of the object's (a trading market is
 * in memory anyway; a timer writes no row, where re-arming the alarm each second wrote one); the
 * alarm serves the minute's roll, the candles' closes and the market's other timers (`alarmBy`),
 * and is set only when its time changes.
 */
export class MarketSecondly {
  private lastSecondlyAt = 0;
  /** The alarm this object set last and has not seen fire (undefined: ask storage). */
  private alarmAt: number | undefined;
  /** The held-back summary's timer, while one waits. */
  private heldBack: unknown;
  /** The timers it uses (a test injects its own). */
  timers: { set(run: () => void, ms: number): unknown; clear(handle: unknown): void } = {
    set: (run, ms) => setTimeout(run, ms),
    clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  };

  constructor(
    private readonly storage: MarketStorage,
    private readonly send: (op: RelayOp) => void,
    private readonly streams: () => MarketStreams,
  ) {}

  /** After a batch changed the market: the summary now, or by the timer within the second. */
  schedule(state: MarketState, now: number): void {
    if (now - this.lastSecondlyAt >= SECONDLY_MS) this.now(state, now);
    else {
      this.heldBack ??= this.timers.set(
        () => {
          this.heldBack = undefined;
          this.now(state, Date.now());
        },
        this.lastSecondlyAt + SECONDLY_MS - now,
      );
    }
  }

  /** The alarm fired: the next `alarmBy` asks storage again. */
  fired(): void {
    this.alarmAt = undefined;
  }

  /** Makes sure the alarm fires no later than `time` (one alarm serves the ticker, the candles and the book files). */
  alarmBy(time: number): void {
    // A busy market asks for the same alarm on every batch: asked of storage once, then known here.
    if (this.alarmAt !== undefined && this.alarmAt <= time) return;
    // Known at once, so a second call in the same turn (a later time) neither asks nor overwrites
    // this one: storage runs the calls in order, and only an earlier time gets this far.
    this.alarmAt = time;
    void this.storage.getAlarm().then((alarm) => {
      if (alarm !== null && alarm <= time) {
        if (this.alarmAt !== undefined && alarm < this.alarmAt) this.alarmAt = alarm;
        return;
      }
      return this.storage.setAlarm(time);
    });
  }

  /**
   * The summary and the once-a-second records, now. A trading market's alarm is the minute's end
   * (and a candle's close): one `setAlarm` a minute, not one a second.
   */
  now(state: MarketState, now: number): void {
    if (this.heldBack !== undefined) this.timers.clear(this.heldBack);
    this.heldBack = undefined;
    this.lastSecondlyAt = now;
    const { symbol } = state.market;
    const ticker = tickerAt(state, now);
    const windows = windowRecordsOf(state, now);
    const price = priceReport(state, now);
    const summary = {
      symbol,
      at: now,
      ticker: JSON.stringify(ticker),
      windows: Object.fromEntries(Object.entries(windows).map(([window, record]) => [window, JSON.stringify(record)])),
      bookTicker: JSON.stringify(bookTickerOf(state, now)),
      lastUpdateTime: ticker.lastUpdateTime ?? null,
      ...(price ? { price } : {}),
    };
    this.send({ symbol, summary });
    // The windows move each minute: a market with trades in the last 24 h reports again then, traded or not.
    if (ticker.tradeCount24h > 0) this.alarmBy(minuteOf(now) + 60_000);
    // An open candle is sent once more, closed, when its interval ends, even if no trade comes.
    const nextClose = this.streams().tick(state, now, ticker, windows);
    if (nextClose !== undefined) this.alarmBy(nextClose);
  }
}
