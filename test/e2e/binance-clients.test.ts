import { createRequire } from "node:module";
import { Spot, WebsocketStream } from "@binance/connector";
import ccxt from "ccxt";
import { afterAll, describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { MarketDataClient } from "../../client/src/index";
import { ccxtConfig } from "../../examples/binance/ccxt-config.mjs";
import { BinanceLocalBook } from "../support/binance-local-book";
import { until } from "../support/poll";
import { newPublishKey } from "./api-keys";

/**
 * Real, unmodified Binance clients against the service as `npm start` runs it, changed only in
 * their base URLs (docs/binance.md): CCXT's `binance` adapter (REST and ccxt.pro) and Binance's
 * own `@binance/connector`. CCXT's requests carry a client address of their own (a header only a
 * test can set), so its 10 requests a second and 5 connections are not shared with other tests.
 */
const baseUrl = inject("baseUrl");
const dialect = `${baseUrl}/binance`;

/** CCXT's `binance`, as docs/binance.md#ccxt configures it (examples/binance/ccxt-config.mjs), from a client address of its own. */
function binance(address: string, options: Record<string, unknown> = {}) {
  const headers = { "CF-Connecting-IP": address };
  const config = ccxtConfig(baseUrl);
  return new ccxt.pro.binance({ ...config, headers, options: { ...config.options, ...options, ws: { ...config.options.ws, options: { headers } } } });
}

// REST and streams apart: each has its address's 10 requests a second and 5 connections to itself.
// CCXT's default market types on the REST one: the futures URLs answer that there are none.
const exchange = binance("198.18.140.1", { fetchMarkets: { types: ["spot", "linear", "inverse"] } });
// Markets loaded in one request, as configured (docs/binance.md#limits): with five connections
// opening at once, the three of the futures URLs would bring the start-up to the address's 10.
const pro = binance("198.18.140.2");
afterAll(() => Promise.all([exchange.close(), pro.close()]));

async function native<T = any>(path: string): Promise<T> {
  return (await fetch(`${baseUrl}${path}`, { headers: { "CF-Connecting-IP": "198.18.141.1" } })).json() as Promise<T>;
}

describe("CCXT's binance adapter, only its URLs changed (docs/binance.md#ccxt)", () => {
  it("Binance's errors map to CCXT's: an unknown symbol is BadSymbol, an interval that is not one BadRequest", async () => {
    await exchange.loadHttpProxyAgent();
    await expect(exchange.publicGetDepth({ symbol: "NOPEUSDT" })).rejects.toBeInstanceOf(ccxt.BadSymbol);
    await expect(exchange.publicGetKlines({ symbol: "BTCUSDT", interval: "2m" })).rejects.toBeInstanceOf(ccxt.BadRequest);
  });

  it("REST: loadMarkets, fetchTime, fetchTicker(s), fetchBidsAsks, fetchOrderBook, fetchTrades (both methods), fetchOHLCV with and without since", async () => {
    const markets = await exchange.loadMarkets();
    const listed = (await native("/api/markets")).markets;
    expect(Object.keys(markets).sort()).toEqual(listed.map((m: any) => `${m.base}/${m.quote}`).sort());
    const btc = markets["BTC/USDT"]!;
    const listing = listed.find((m: any) => m.symbol === "BTCUSDT");
    expect([btc.id, btc.spot, btc.active, btc.precision.price, btc.precision.amount, btc.limits.amount?.min, btc.limits.cost?.min]).toEqual([
      "BTCUSDT",
      true,
      true,
      Number(listing.tickSize),
      Number(listing.stepSize),
      Number(listing.minQty),
      Number(listing.minNotional),
    ]);

    expect(Math.abs((await exchange.fetchTime())! - Date.now())).toBeLessThan(5_000);

    const ticker = await exchange.fetchTicker("BTC/USDT");
    expect(ticker.symbol).toBe("BTC/USDT");
    expect(ticker.last).toBeGreaterThan(0);
    expect(ticker.bid).toBeLessThan(ticker.ask!);
    expect(ticker.bidVolume).toBeGreaterThan(0);
    const bidsAsks = await exchange.fetchBidsAsks(["BTC/USDT", "ETH/USDT"]);
    expect(Object.keys(bidsAsks).sort()).toEqual(["BTC/USDT", "ETH/USDT"]);

    const book = await exchange.fetchOrderBook("BTC/USDT", 10);
    expect(book.bids.length).toBe(10);
    expect(book.bids[0]![0]!).toBeLessThan(book.asks[0]![0]!);
    const nativeBook = await native("/api/orderbook/BTCUSDT?depth=10");
    expect(nativeBook.sequence).toBeGreaterThanOrEqual(book.nonce!);

    await until(async () => (await native("/api/trades/BTCUSDT?limit=5")).length >= 5, { what: "five demo trades", timeoutMs: 30_000 });
    const aggregated = await exchange.fetchTrades("BTC/USDT", undefined, 5);
    const plain = await exchange.fetchTrades("BTC/USDT", undefined, 5, { fetchTradesMethod: "publicGetTrades" });
    for (const trades of [aggregated, plain]) {
      expect(trades.length).toBe(5);
      for (const t of trades) expect([t.symbol, t.price! > 0, t.amount! > 0, ["buy", "sell"].includes(t.side!)]).toEqual(["BTC/USDT", true, true, true]);
      expect(trades.map((t) => t.timestamp)).toEqual([...trades.map((t) => t.timestamp)].sort((a, b) => a! - b!));
    }

    const candles = await exchange.fetchOHLCV("BTC/USDT", "1m", undefined, 3);
    expect(candles.length).toBeGreaterThan(0);
    const nativeCandles = await native(`/api/klines/BTCUSDT?interval=1m&limit=3`);
    expect(candles[0]![0]).toBe(nativeCandles[0].openTime);
    const since = candles[candles.length - 1]![0]!;
    const fromSince = await exchange.fetchOHLCV("BTC/USDT", "1m", since, 10);
    expect(fromSince[0]![0]).toBe(since);
    // Last: CCXT weighs every market's tickers as 16 requests and waits that long before its next one.
    const tickers = await exchange.fetchTickers();
    expect(Object.keys(tickers).sort()).toEqual(Object.keys(markets).sort());
  });

  it("CCXT: candles in every interval (1w and 1M too), and trades from six days ago through aggTrades", async () => {
    // Trades published six days late (the ingest takes up to seven), as a feed's backfill would.
    const issued = await newPublishKey(baseUrl, ["BTCUSDC"]);
    const publisher = new MarketDataClient({ baseUrl, apiKey: issued.id, secret: issued.secret, headers: { "CF-Connecting-IP": "198.18.140.9" } });
    const start = Date.now() - 6 * 86_400_000;
    const ids = Array.from({ length: 5 }, (_, i) => `week-${start}-${i}`);
    const answer = await publisher.ingestMarketData({
      symbol: "BTCUSDC",
      trades: ids.map((id, i) => ({ id, price: `6100${i}.00`, quantity: "0.01000", side: "buy" as const, time: start + i * 60_000 })),
    });
    expect(answer.acceptedTrades).toBe(5);
    const trades = await exchange.fetchTrades("BTC/USDC", start - 60_000);
    expect(
      trades.map((t) => [t.timestamp, t.price]),
      "the week-old trades, through aggTrades with startTime and endTime",
    ).toEqual(ids.map((_, i) => [start + i * 60_000, 61000 + i]));
    for (const timeframe of ["1s", "1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w", "1M"]) {
      const candles = await exchange.fetchOHLCV("BTC/USDC", timeframe, undefined, 5);
      expect(candles.length, timeframe).toBeGreaterThan(0);
    }
    const weeks = await exchange.fetchOHLCV("BTC/USDC", "1w", start - 7 * 86_400_000);
    const weekOf = (t: number) => Math.floor((t - 4 * 86_400_000) / (7 * 86_400_000)) * 7 * 86_400_000 + 4 * 86_400_000;
    expect(
      weeks.map((c) => c[0]),
      "the week holding the six-day-old trades, opening on a Monday",
    ).toContain(weekOf(start));
    // CCXT's rolling ticker is GET /api/v3/ticker with windowSize (it answered -1020 before).
    const rolling = await exchange.fetchTicker("BTC/USDC", { rolling: true, windowSize: "7d" });
    expect([rolling.symbol, rolling.last! > 0, rolling.baseVolume! >= 0.05], "the week's window holds the five trades").toEqual(["BTC/USDC", true, true]);
  });

  it("ccxt.pro: watchOrderBook kept for 15 seconds equals REST; watchTrades, watchTicker, watchOHLCV and watchBidsAsks deliver", async () => {
    await pro.loadHttpProxyAgent();
    // No retry: a dropped connection fails the test (docs/streams.md#dropped-connections-1006).
    const trades = await pro.watchTrades("BTC/USDT");
    expect(trades.length).toBeGreaterThan(0);
    expect(trades[0]!.symbol).toBe("BTC/USDT");
    const ticker = await pro.watchTicker("BTC/USDT");
    expect([ticker.symbol, ticker.last! > 0]).toEqual(["BTC/USDT", true]);
    const ohlcv = await pro.watchOHLCV("BTC/USDT", "1m");
    expect(ohlcv[ohlcv.length - 1]![4]).toBeGreaterThan(0);
    const bidsAsks = await pro.watchBidsAsks(["BTC/USDT"]);
    expect(bidsAsks["BTC/USDT"]!.bid).toBeLessThan(bidsAsks["BTC/USDT"]!.ask!);

    const watchBook = () => pro.watchOrderBook("BTC/USDT");
    // 15 s: about 150 updates of the demo feed's BTCUSDT, each applied by CCXT to the book it keeps.
    const until = Date.now() + 15_000;
    let updates = 0;
    while (Date.now() < until) {
      await watchBook();
      updates += 1;
    }
    expect(updates).toBeGreaterThan(10);
    // Equal at one nonce: take REST, let the live book reach it, and compare when both show the same update.
    // (REST read here directly: CCXT would pace a 1000-level depth as 10 requests.)
    for (let attempt = 0; attempt < 20; attempt++) {
      const rest = await native("/binance/api/v3/depth?symbol=BTCUSDT&limit=1000");
      // The book as it is now (watchOrderBook would wait for the next update).
      let live = (pro.orderbooks["BTC/USDT"] as unknown as Awaited<ReturnType<typeof pro.watchOrderBook>> | undefined) ?? (await watchBook());
      while (live.nonce! < rest.lastUpdateId) live = await watchBook();
      if (live.nonce !== rest.lastUpdateId) {
        // REST's copy (up to 250 ms old) was behind: ask again after the next update, not at once.
        await watchBook();
        continue;
      }
      const levels = (side: [string, string][]) => side.map(([price, quantity]) => [Number(price), Number(quantity)]);
      expect({ bids: live.bids.slice(0, 1000), asks: live.asks.slice(0, 1000) }).toEqual({ bids: levels(rest.bids), asks: levels(rest.asks) });
      return;
    }
    throw new Error("the live book and REST never showed the same nonce in 20 tries");
  }, 120_000);
});

describe("Binance's @binance/connector, only its base URLs changed (docs/binance.md#binance-connector)", () => {
  const quiet = { debug() {}, info() {}, log() {}, warn() {}, error() {} };
  const client = new Spot("", "", { baseURL: dialect });
  // The connector has no option for headers; its requests go through the axios it requires, whose
  // defaults give them a client address of their own here (its WebSocket's upgrade has none).
  createRequire(import.meta.url)("axios").defaults.headers.common["CF-Connecting-IP"] = "198.18.143.1";

  it("Spot REST: exchangeInfo, depth, trades, klines, ticker24hr, tickerPrice, bookTicker; errors in Binance's shape", async () => {
    await until(async () => (await native("/api/trades/BTCUSDT?limit=1")).length > 0, { what: "a first demo trade", timeoutMs: 30_000 });
    const info = (await client.exchangeInfo({ symbols: ["BTCUSDT", "ETHUSDT"] })).data;
    expect(info.symbols.map((s: any) => s.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    const depth = (await client.depth("BTCUSDT", { limit: 5 })).data;
    expect([depth.bids.length, depth.asks.length, depth.lastUpdateId > 0]).toEqual([5, 5, true]);
    expect((await client.trades("BTCUSDT", { limit: 3 })).data.length).toBeGreaterThan(0);
    expect((await client.klines("BTCUSDT", "5m", { limit: 2 })).data[0]).toHaveLength(12);
    expect((await client.ticker24hr("", ["BTCUSDT", "ETHUSDT"], "MINI")).data.map((t: any) => t.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    expect((await client.tickerPrice("ETHUSDT")).data.symbol).toBe("ETHUSDT");
    expect(Number((await client.bookTicker("ETHUSDT")).data.bidPrice)).toBeGreaterThan(0);
    const refused = await client.depth("NOPEUSDT").catch((error: any) => error.response);
    expect([refused.status, refused.data.code]).toEqual([400, -1121]);
  });

  it("Spot REST: rolling windows, the trading day and weekly klines", async () => {
    // A client address of its own: the requests above used most of theirs this second.
    const defaults = createRequire(import.meta.url)("axios").defaults.headers.common;
    defaults["CF-Connecting-IP"] = "198.18.143.2";
    try {
      const rolling = (await client.rollingWindowTicker("BTCUSDT", [], { windowSize: "4h" })).data;
      expect([rolling.symbol, rolling.closeTime - rolling.openTime >= 4 * 3_600_000]).toEqual(["BTCUSDT", true]);
      const minis = (await client.rollingWindowTicker("", ["BTCUSDT", "ETHUSDT"], { windowSize: "1h", type: "MINI" })).data;
      expect(minis.map((t: any) => t.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
      const day = (await client.publicRequest("GET", "/api/v3/ticker/tradingDay", { symbol: "BTCUSDT", timeZone: "8" })).data;
      expect([day.symbol, (day.openTime + 8 * 3_600_000) % 86_400_000, day.closeTime - day.openTime]).toEqual(["BTCUSDT", 0, 86_399_999]);
      expect((await client.klines("BTCUSDT", "1w", { limit: 2 })).data[0]).toHaveLength(12);
    } finally {
      defaults["CF-Connecting-IP"] = "198.18.143.1";
    }
  });

  it("WebsocketStream: a local book kept by Binance's algorithm from the diff stream ends equal to REST", async () => {
    const local = new BinanceLocalBook();
    let diffs = 0;
    const trades: unknown[] = [];
    const stream = new WebsocketStream({
      logger: quiet,
      wsURL: dialect.replace(/^http/, "ws"),
      callbacks: {
        message: (text: string) => {
          const event = JSON.parse(text);
          if (event.e === "depthUpdate") {
            diffs += 1;
            local.event(event);
          }
          if (event.e === "trade") trades.push(event);
        },
      },
    });
    stream.diffBookDepth("btcusdt", "100ms");
    await until(() => diffs > 0, { what: "a first diff event", timeoutMs: 30_000 });
    stream.subscribe("btcusdt@trade");
    local.snapshot((await client.depth("BTCUSDT", { limit: 1000 })).data);
    await until(() => trades.length > 0, { what: "a trade event", timeoutMs: 30_000 });
    try {
      // Compared with REST read from an address of its own (the connector's requests share one with other tests).
      for (let attempt = 0; attempt < 20; attempt++) {
        const rest = await native("/binance/api/v3/depth?symbol=BTCUSDT&limit=1000");
        await until(() => local.lastUpdateId >= rest.lastUpdateId, { what: `the diff stream to reach ${rest.lastUpdateId}`, timeoutMs: 30_000 });
        if (local.lastUpdateId !== rest.lastUpdateId) {
          // REST's copy (up to 250 ms old) was behind: ask again after the next diff, not at once.
          const seen = diffs;
          await until(() => diffs > seen, { what: "the next diff", timeoutMs: 30_000 });
          continue;
        }
        expect(local.levels(1000)).toEqual({ bids: rest.bids, asks: rest.asks });
        expect(local.gaps, "gaps").toBe(0);
        return;
      }
      throw new Error("the local book and REST never showed the same update in 20 tries");
    } finally {
      stream.disconnect();
    }
  }, 120_000);
});

describe("keepalive on the Binance streams (docs/binance.md#streams)", () => {
  it("a WebSocket ping frame is answered with a pong carrying its payload", async () => {
    const socket = new WebSocket(`${dialect.replace(/^http/, "ws")}/ws/btcusdt@trade`, { headers: { "CF-Connecting-IP": "198.18.142.1" } });
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    const pong = new Promise<string>((resolve) => socket.once("pong", (data) => resolve(data.toString())));
    socket.ping("are-you-there");
    expect(await pong).toBe("are-you-there");
    socket.close();
  });
});
