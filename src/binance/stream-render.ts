/**
 * Binance's stream payloads made from native events (docs/binance.md#streams), pure: what one
 * native event says on one Binance stream, and how a frame carries it.
 */

import type { TickerRecord, WindowRecord } from "../domain/rolling-window";
import type { WireTrade } from "../domain/wire-trade";
import type { AveragePrice } from "../market/market-state";
import { findMarket } from "../registry/copy";
import type { BookMessage, WireBook } from "../streams/wire-book";
import type { BinanceStream } from "./streams";
import * as binance from "./translate";

/** A raw connection carries the payload; a combined one wraps it as `{stream, data}`. */
export function frame(view: BinanceStream, payload: unknown, combined: boolean): string {
  return JSON.stringify(combined ? { stream: view.name, data: payload } : payload);
}

/** The payloads one native event makes on one Binance stream (none when it says nothing there). */
export function render(view: BinanceStream, data: unknown, book: WireBook | undefined, now: number): unknown[] {
  const symbol = view.native.subject;
  switch (view.kind) {
    case "trade":
      return (data as WireTrade[]).map((t) => binance.tradeEvent(t, symbol, now));
    case "aggTrade":
      return (data as WireTrade[]).map((t) => binance.aggTradeEvent(t, symbol, now));
    case "kline":
      return [binance.klineEvent(data as binance.StreamedKline, symbol, now)];
    case "miniTicker":
      return [binance.miniTickerEvent(data as TickerRecord, now)];
    case "ticker": {
      const market = findMarket(symbol);
      return market ? [binance.tickerEvent(data as TickerRecord, market, now)] : [];
    }
    case "bookTicker": {
      const market = findMarket(symbol);
      return market ? [binance.bookTickerEvent(data as binance.NativeBookTicker, market)] : [];
    }
    case "windowTicker":
      return [binance.windowTickerEvent(data as WindowRecord, view.window!, now)];
    case "allWindowTickers":
      return [(data as WindowRecord[]).map((w) => binance.windowTickerEvent(w, view.window!, now))];
    case "avgPrice":
      return [binance.avgPriceEvent(data as AveragePrice, now)];
    case "allMiniTickers":
      return [(data as TickerRecord[]).map((t) => binance.miniTickerEvent(t, now))];
    case "allTickers":
      return [
        (data as TickerRecord[]).flatMap((t) => {
          const market = findMarket(t.symbol);
          return market ? [binance.tickerEvent(t, market, now)] : [];
        }),
      ];
    case "depthPartial":
      return book ? [binance.partialDepthEvent(book.snapshot(view.levels!))] : [];
    case "depthDiff":
      return depthDiff(symbol, data as BookMessage, now);
  }
}

/**
 * A diff event covering `U`…`u`: a delta as the native subscribers get it (a publisher's snapshot
 * that continues the book comes as one, src/streams/stream-hub.ts). A snapshot that does not
 * continue it (a resync) sends nothing: the next event's `U` then skips, and a client following
 * Binance's algorithm fetches a new REST snapshot (docs/binance.md#a-local-order-book).
 */
function depthDiff(symbol: string, message: BookMessage, now: number): unknown[] {
  if (message.type !== "delta") return [];
  return [binance.depthUpdateEvent(symbol, message.firstSequence ?? message.sequence, message.sequence, message.bids, message.asks, now)];
}

/**
 * A paced stream's two payloads as one (`@depth` and `@depthN` at 1000 ms): a partial book is the
 * newer; two diffs that follow each other (`U` = the earlier's `u` + 1) are one diff from the
 * earlier's `U` to the later's `u`, each price at its last quantity. Diffs with a gap between them
 * (a resync) stay two, so a client following Binance's algorithm still sees the gap.
 */
export function merge(view: BinanceStream, earlier: unknown, later: unknown): unknown | null {
  if (view.kind === "depthPartial") return later;
  if (view.kind !== "depthDiff") return null;
  const a = earlier as DepthUpdate;
  const b = later as DepthUpdate;
  if (b.U !== a.u + 1) return null;
  const side = (x: readonly (readonly [string, string])[], y: readonly (readonly [string, string])[]) => [...new Map([...x, ...y]).entries()];
  return { ...b, U: a.U, b: side(a.b, b.b), a: side(a.a, b.a) };
}

type DepthUpdate = ReturnType<typeof binance.depthUpdateEvent>;
