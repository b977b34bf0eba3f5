import { formatUnits } from "../core/decimal";
import type { Kline } from "../domain/candles";
import { type KlineInterval, openTimeOf } from "../domain/intervals";
import type { BookUpdate } from "../domain/order-book";
import type { TickerRecord, WindowRecord } from "../domain/rolling-window";
import type { StoredTrade } from "../domain/trades";
import { type WireTrade, wireTrade } from "../domain/wire-trade";
import type { RelayOp } from "../groups/messages";
import { CONFLATE_MS, Conflation } from "../streams/conflation";
import { klineStreams, MARKET_ENDED_STREAM, type StreamEvent, TICKER_WINDOWS } from "../streams/protocol";
import { averagePriceOf, bookTickerOf, checksumOf, type MarketState, snapshotMessageOf } from "./market-state";

/** The candle of an interval (at an offset) opening at a time, from the market's stored buckets. */
export type CandleAt = (state: MarketState, openTime: number, interval: KlineInterval, offsetMs: number) => Kline | undefined;

/**
 * Everything a market's stream subscribers get (docs/streams.md), assembled apart from the
 * market's writes: which shards are subscribed (stored by the market), the interval's conflated
 * book change and trades, the top of the book when it changed, and the once-a-second records
 * (ticker, rolling windows, average price, candles). Every event goes down the market's one
 * ordered channel to its group relay (`send`), at most one flush per CONFLATE_MS.
 */
export class MarketStreams {
  /** Shards subscribed to this market's streams: nothing is built for streams nobody watches. */
  private shards: Set<string>;
  /** The stream changes of the current interval, and when the last interval's went out. */
  private readonly conflation = new Conflation<WireTrade>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushedAt = Number.NEGATIVE_INFINITY;
  /** Per kline stream, the candle last sent, as text, and whether closed. */
  private readonly klinesSent = new Map<string, { openTime: number; closeTime: number; text: string; closed: boolean }>();
  /** The top of the book last sent on `bookTicker.{SYMBOL}`, as text, and whether it may have changed since. */
  private bookTickerSent = "";
  private bookTickerDirty = false;
  /** The average price last sent on `avgPrice.{SYMBOL}`, as `price|lastTradeTime`. */
  private averageSent = "";
  /** Stream events waiting for the next flush (the once-a-second records). */
  private readonly queue: StreamEvent[] = [];

  constructor(
    shards: readonly string[],
    private readonly send: (op: RelayOp) => void,
    /** Stores the subscribed shards (they survive eviction). */
    private readonly storeShards: (shards: string[]) => void,
    private readonly candleAt: CandleAt,
  ) {
    this.shards = new Set(shards);
  }

  get watched(): boolean {
    return this.shards.size > 0;
  }

  /** Accepted trades and applied book updates join the interval's conflation. */
  batch(state: MarketState, book: readonly BookUpdate[] | undefined, trades: StoredTrade[]): void {
    if (!this.watched) return;
    if (book) {
      this.conflation.addBook(book);
      this.bookTickerDirty = true;
    }
    if (trades.length > 0) this.conflation.addTrades(trades.map((t) => wireTrade(state.market, t)));
    this.schedule(state);
  }

  /**
   * The once-a-second records (docs/streams.md): the ticker, the rolling windows, the average
   * price when it changed and the candles. Returns when an open candle closes by the clock (the
   * market's alarm sends it closed then), or undefined.
   */
  tick(state: MarketState, now: number, ticker: TickerRecord, windows: Record<string, WindowRecord>): number | undefined {
    if (!this.watched) return undefined;
    const { symbol } = state.market;
    const events: StreamEvent[] = [{ stream: `ticker.${symbol}`, data: ticker }];
    for (const window of TICKER_WINDOWS) events.push({ stream: `ticker.${symbol}.${window}`, data: windows[window] });
    const average = averagePriceOf(state, now);
    const averageKey = average && `${average.price}|${average.lastTradeTime}`;
    if (average && averageKey !== this.averageSent) {
      this.averageSent = averageKey!;
      events.push({ stream: `avgPrice.${symbol}`, data: average });
    }
    const klines = this.klineEvents(state, now);
    this.queue.push(...events, ...klines.events);
    this.schedule(state);
    return klines.nextClose;
  }

  /**
   * `kline.{SYMBOL}.{interval}[@+08:00]` (docs/streams.md): per stream, the latest candle when it
   * changed (at most once a second, with the ticker), and once with `closed: true` when its
   * interval ended — by the clock, or because trades began a later one. Late trades into an older
   * candle are not streamed; `GET /api/klines` has them.
   */
  private klineEvents(state: MarketState, now: number): { events: StreamEvent[]; nextClose?: number } {
    const events: StreamEvent[] = [];
    let nextClose: number | undefined;
    if (state.lastTradePrice === undefined) return { events };
    for (const { stream, interval, offsetMs } of klineStreams(state.market.symbol)) {
      const sent = this.klinesSent.get(stream);
      const openTime = openTimeOf(state.lastTradeTime, interval, offsetMs);
      if (sent && !sent.closed && (openTime > sent.openTime || now > sent.closeTime)) {
        const final = this.candleAt(state, sent.openTime, interval, offsetMs);
        if (final) events.push({ stream, data: { ...final, interval, closed: true } });
        sent.closed = true;
      }
      if (sent && openTime < sent.openTime) continue;
      const candle = this.candleAt(state, openTime, interval, offsetMs);
      if (!candle) continue;
      const closed = now > candle.closeTime;
      const text = JSON.stringify(candle);
      if (sent?.openTime === openTime && sent.text === text && (sent.closed || !closed)) continue;
      events.push({ stream, data: { ...candle, interval, closed } });
      this.klinesSent.set(stream, { openTime, closeTime: candle.closeTime, text, closed });
      // A second's candle does not wake the market: it goes out closed with the next tick, so
      // the ticker stays at most once a second (an alarm each second would send it more often).
      if (!closed && interval !== "1s") nextClose = Math.min(nextClose ?? Number.POSITIVE_INFINITY, candle.closeTime + 1);
    }
    return { events, nextClose };
  }

  /**
   * Every stream event of the market goes out in one paced flush (docs/streams.md#conflation): the
   * interval's merged book change and trades, the top of the book if it changed, and whatever
   * else was queued — at most one relay call per CONFLATE_MS for the streams, however fast the
   * market moves. The first change after a quiet interval goes at once.
   */
  private schedule(state: MarketState): void {
    if (!this.watched || this.timer !== undefined) return;
    const wait = this.flushedAt + CONFLATE_MS - Date.now();
    if (wait <= 0) this.flush(state);
    else
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush(state);
      }, wait);
  }

  /** Sends the interval's merged book change and trades as one message each, with the rest of the interval's events. */
  private flush(state: MarketState): void {
    const events: StreamEvent[] = [];
    const { symbol, priceScale, quantityScale } = state.market;
    const { book, trades } = this.conflation.take();
    if (book) {
      // Every applied update joined the interval, so the book is at `book.sequence` now.
      const level = ([price, quantity]: readonly [bigint, bigint]) => [
        formatUnits(price, priceScale),
        quantity === 0n ? "0" : formatUnits(quantity, quantityScale),
      ];
      events.push({
        stream: `book.${symbol}`,
        data:
          book.type === "snapshot"
            ? // firstSequence says it continues the previous message: the shard sends it on as a delta (src/streams/stream-hub.ts).
              {
                ...snapshotMessageOf(state),
                firstSequence: book.firstSequence,
                touched: { bids: book.touched!.bids.map((p) => formatUnits(p, priceScale)), asks: book.touched!.asks.map((p) => formatUnits(p, priceScale)) },
              }
            : {
                type: "delta",
                firstSequence: book.firstSequence,
                sequence: book.sequence,
                time: state.book.updatedAt,
                checksum: checksumOf(state),
                bids: book.bids.map(level),
                asks: book.asks.map(level),
              },
      });
    }
    if (trades.length > 0) events.push({ stream: `trades.${symbol}`, data: trades });
    if (this.bookTickerDirty) {
      // `bookTicker.{SYMBOL}`: the top of the book when it changed since the last one sent.
      this.bookTickerDirty = false;
      const top = bookTickerOf(state, Date.now());
      const key = `${top.bidPrice}|${top.bidQty}|${top.askPrice}|${top.askQty}`;
      if (key !== this.bookTickerSent) {
        this.bookTickerSent = key;
        events.push({ stream: `bookTicker.${symbol}`, data: top });
      }
    }
    events.push(...this.queue.splice(0));
    if (events.length === 0) return;
    this.flushedAt = Date.now();
    this.send({ symbol, events });
  }

  /**
   * A shard subscribes. Its first message is the whole book, sent down the same ordered
   * channel as every delta after it, so the shard's copy continues exactly.
   */
  join(state: MarketState, shard: string): void {
    // What the interval holds so far goes to the shards already subscribed; the new one starts from the base.
    if (this.watched) this.flush(state);
    this.setShard(shard, true);
    const { symbol } = state.market;
    this.send({ symbol, join: shard, welcome: [{ stream: `book.${symbol}`, data: snapshotMessageOf(state) }] });
  }

  leave(state: MarketState, shard: string): void {
    this.setShard(shard, false);
    this.send({ symbol: state.market.symbol, leave: shard });
  }

  /** The market was delisted: down the same ordered channel as every event, the shards end its streams, then leave. */
  end(state: MarketState): void {
    if (!this.watched) return;
    const { symbol } = state.market;
    this.send({ symbol, events: [{ stream: MARKET_ENDED_STREAM, data: { symbol } }] });
    for (const shard of [...this.shards]) this.leave(state, shard);
  }

  private setShard(shard: string, subscribed: boolean): void {
    if (subscribed === this.shards.has(shard)) return;
    if (subscribed) this.shards.add(shard);
    else this.shards.delete(shard);
    // With nobody left the interval's changes go nowhere: a later subscriber starts from a base.
    if (!this.watched) {
      this.conflation.take();
      this.queue.length = 0;
    }
    this.storeShards([...this.shards]);
  }
}
