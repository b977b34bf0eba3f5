import type { WireTrade } from "../market/market-object";
import type { TickerRecord } from "../market/rolling-window";
import { findMarket } from "../registry/copy";
import type { StreamName } from "../streams/protocol";
import type { BookMessage, WireBook } from "../streams/wire-book";
import type { BinanceStream } from "./streams";
import * as binance from "./translate";

/** What a shard knows of a market's book when a book event passes: its copy before and after the event. */
export interface BookContext {
  before: WireBook | undefined;
  after: WireBook | undefined;
}

/**
 * A shard's Binance subscribers (docs/binance.md#streams): which sockets hold which Binance
 * streams, and the rendering of each native event into the frames those streams carry — done
 * once per stream and framing, then sent as the same string to every socket that holds it.
 */
export class BinanceFanout {
  /** Per Binance stream name, the stream and the sockets that hold it. */
  private readonly held = new Map<string, { stream: BinanceStream; sockets: Set<WebSocket> }>();
  /** Per native stream, the Binance streams made from it that have a subscriber here. */
  private readonly views = new Map<string, Map<string, BinanceStream>>();

  constructor(
    private readonly send: (ws: WebSocket, text: string) => void,
    private readonly isCombined: (ws: WebSocket) => boolean,
  ) {}

  add(ws: WebSocket, stream: BinanceStream): void {
    let entry = this.held.get(stream.name);
    if (!entry) this.held.set(stream.name, (entry = { stream, sockets: new Set() }));
    entry.sockets.add(ws);
    let views = this.views.get(stream.native.name);
    if (!views) this.views.set(stream.native.name, (views = new Map()));
    views.set(stream.name, stream);
  }

  /** By name: a stream whose market went away since still leaves. */
  remove(ws: WebSocket, name: string): void {
    const entry = this.held.get(name);
    if (!entry?.sockets.delete(ws) || entry.sockets.size > 0) return;
    this.held.delete(name);
    const views = this.views.get(entry.stream.native.name);
    views?.delete(name);
    if (views?.size === 0) this.views.delete(entry.stream.native.name);
  }

  /** True while a Binance stream made from this native stream has a subscriber here. */
  wants(nativeName: string): boolean {
    return this.views.has(nativeName);
  }

  /** Sends the frames one native event makes on every Binance stream made from it. */
  deliver(native: StreamName, data: unknown, book: BookContext): void {
    const views = this.views.get(native.name);
    if (!views) return;
    const now = Date.now();
    for (const view of views.values()) {
      const payloads = render(view, data, book, now);
      if (payloads.length > 0) this.sendAll(view, payloads);
    }
  }

  /** The current partial book to a new `@depthN` subscriber, so it need not wait for the next change. */
  greet(ws: WebSocket, view: BinanceStream, book: WireBook | undefined): void {
    if (view.kind !== "depthPartial" || !book) return;
    this.send(ws, frame(view, binance.partialDepthEvent(book.snapshot(view.levels!)), this.isCombined(ws)));
  }

  private sendAll(view: BinanceStream, payloads: unknown[]): void {
    const texts: Partial<Record<"raw" | "combined", string[]>> = {};
    for (const ws of this.held.get(view.name)?.sockets ?? []) {
      const combined = this.isCombined(ws);
      const key = combined ? "combined" : "raw";
      texts[key] ??= payloads.map((p) => frame(view, p, combined));
      for (const text of texts[key]) this.send(ws, text);
    }
  }
}

/** A raw connection carries the payload; a combined one wraps it as `{stream, data}`. */
function frame(view: BinanceStream, payload: unknown, combined: boolean): string {
  return JSON.stringify(combined ? { stream: view.name, data: payload } : payload);
}

/** The payloads one native event makes on one Binance stream (none when it says nothing there). */
export function render(view: BinanceStream, data: unknown, book: BookContext, now: number): unknown[] {
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
      return book.after ? [binance.partialDepthEvent(book.after.snapshot(view.levels!))] : [];
    case "depthDiff":
      return depthDiff(symbol, data as BookMessage, book, now);
  }
}

/**
 * A diff event covering `U`…`u`: a delta as it came (its `firstSequence`…`sequence`); a snapshot
 * that continues the shard's copy (a publisher's snapshot) as every level that changed or that an
 * update in between touched, so it brings any book from `U − 1` to `u` exactly (a client's REST
 * snapshot may fall inside the event, as Binance's algorithm allows). A snapshot
 * that does not continue it (a resync) sends nothing: the next event's `U` then skips, and a
 * client following Binance's algorithm fetches a new REST snapshot (docs/binance.md#a-local-order-book).
 */
function depthDiff(symbol: string, message: BookMessage, book: BookContext, now: number): unknown[] {
  if (message.type === "delta") {
    return [binance.depthUpdateEvent(symbol, message.firstSequence ?? message.sequence, message.sequence, message.bids, message.asks, now)];
  }
  const { before, after } = book;
  if (!before || !after || before === after || message.firstSequence !== before.sequence + 1) return [];
  const changes = after.changesSince(before, message.touched);
  return [binance.depthUpdateEvent(symbol, message.firstSequence, after.sequence, changes.bids, changes.asks, now)];
}
