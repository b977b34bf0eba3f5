import net from "node:net";
import { WebsocketAPI } from "@binance/connector";
import ccxt from "ccxt";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { ccxtConfig } from "../../examples/binance/ccxt-config.mjs";
import { adminToken } from "../../scripts/publish-key.mjs";
import { listVenue } from "../../scripts/venue.mjs";
import { until } from "../support/poll";
import { newPublishKey } from "./api-keys";

/**
 * Binance's WebSocket API (docs/binance.md#websocket-api) through Binance's own clients, changed
 * only in their URLs, against `npm start`; and the check that a client configured as the docs say
 * never reaches the real exchange: every connection this process opens during the file is
 * recorded, and every one must go to 127.0.0.1.
 */
const baseUrl = inject("baseUrl");
const dialect = `${baseUrl}/binance`;
const wsDialect = dialect.replace(/^http/, "ws");

const destinations: string[] = [];
const connect = net.Socket.prototype.connect;
beforeAll(() => {
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    // Node hands connect its arguments normalized as [options, callback] (or as given by a caller of its own).
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const options = typeof first === "object" && first !== null ? (first as { host?: string; path?: string }) : undefined;
    destinations.push(options?.path ? `unix:${options.path}` : String(options?.host ?? (typeof args[1] === "string" ? args[1] : "localhost")));
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof connect;
});
afterAll(() => {
  net.Socket.prototype.connect = connect;
  expect(destinations.length, "connections made").toBeGreaterThan(0);
  expect(
    destinations.filter((host) => host !== "127.0.0.1"),
    "connections that left this machine",
  ).toEqual([]);
});

beforeAll(async () => {
  // The demo feed's first trades (it starts with the service's first request).
  await until(
    async () =>
      ((await (await fetch(`${baseUrl}/api/trades/BTCUSDT?limit=1`, { headers: { "CF-Connecting-IP": "198.18.151.1" } })).json()) as unknown[]).length > 0,
    {
      what: "a first demo trade",
      timeoutMs: 30_000,
    },
  );
});

describe("@binance/connector's WebsocketAPI, only its URL changed", () => {
  it("answers time, depth, klines, trades.recent, ticker.24hr and ticker.price", async () => {
    const answers: any[] = [];
    let opened = false;
    const quiet = { debug() {}, info() {}, log() {}, warn() {}, error() {} };
    const api = new WebsocketAPI("", "", {
      logger: quiet,
      wsURL: `${wsDialect}/ws-api/v3`,
      callbacks: {
        open: () => {
          opened = true;
        },
        message: (text: string) => answers.push(JSON.parse(text)),
      },
    });
    try {
      await until(() => opened, { what: "the WebSocket API connection" });
      // The connector's upgrade carries no client address: its requests share the address-less
      // bucket's 10 a second with anything else that has none, so they go at 4 a second.
      const ask = async (send: () => void) => {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const before = answers.length;
        send();
        return until(() => answers[before], { what: "an answer" });
      };
      const time = await ask(() => api.time());
      expect(time, "time").toMatchObject({ status: 200, result: { serverTime: expect.any(Number) } });
      const depth = await ask(() => api.orderbook("BTCUSDT", { limit: 5 }));
      expect([depth.status, depth.result.bids.length, depth.result.lastUpdateId > 0]).toEqual([200, 5, true]);
      expect((await ask(() => api.klines("BTCUSDT", "1m", { limit: 3 }))).result[0]).toHaveLength(12);
      expect((await ask(() => api.trades("BTCUSDT", { limit: 3 }))).result.length).toBeGreaterThan(0);
      expect((await ask(() => api.ticker24hr({ symbol: "ETHUSDT" }))).result.symbol).toBe("ETHUSDT");
      expect((await ask(() => api.tickerPrice({ symbol: "ETHUSDT" }))).result).toEqual({ symbol: "ETHUSDT", price: expect.any(String) });
      const refused = await ask(() => api.orderbook("NOPEUSDT"));
      expect([refused.status, refused.error.code]).toEqual([400, -1121]);
    } finally {
      api.disconnect();
    }
  }, 60_000);
});

describe("CCXT configured as docs/binance.md#ccxt says: the WebSocket API too, nothing reaches Binance", () => {
  const headers = { "CF-Connecting-IP": "198.18.150.9" };
  // The example's own configuration (examples/binance/ccxt-config.mjs), with this test's client address.
  const config = ccxtConfig(baseUrl);
  const exchange = new ccxt.pro.binance({
    ...config,
    headers,
    options: { ...config.options, ws: { ...config.options.ws, options: { headers } } },
  });
  afterAll(() => exchange.close());

  it("fetchOHLCVWs and fetchTradesWs answer from this venue, equal to REST", async () => {
    await exchange.loadHttpProxyAgent();
    await exchange.loadMarkets();
    const candles = await exchange.fetchOHLCVWs("BTC/USDT", "1m", undefined, 3);
    // REST asked after, for more candles: a minute that began in between leaves the WebSocket's all among them.
    const rest = await exchange.fetchOHLCV("BTC/USDT", "1m", undefined, 5);
    expect(candles.length, "candles over the WebSocket API").toBeGreaterThan(0);
    const restTimes = rest.map((c) => c[0]);
    expect(
      candles.filter((c) => !restTimes.includes(c[0])),
      "candles over the WebSocket API that REST does not have (open times)",
    ).toEqual([]);
    const trades = await exchange.fetchTradesWs("BTC/USDT", undefined, 5);
    expect(trades.length, "trades over the WebSocket API").toBeGreaterThan(0);
    // CCXT parses these answers without their market (as against Binance): the ids and prices are this venue's.
    const restTrades = await exchange.fetchTrades("BTC/USDT", undefined, 1000, { fetchTradesMethod: "publicGetTrades" });
    const known = new Set(restTrades.map((t) => t.id));
    expect(
      trades.every((t) => known.has(t.id) && (t.price ?? 0) > 0),
      "each trade is one of this venue's",
    ).toBe(true);
    expect(await exchange.fetchStatus(), "fetchStatus from sapi here").toMatchObject({ status: "ok" });
  }, 60_000);

  it("fetchOrderBook(…, 5000) gets a book of 1,500 levels a side whole, and fetchTickers takes 150 symbols in one request", async () => {
    await listVenue({ url: baseUrl, token: adminToken(), count: 150 }); // V0USDT … V149USDT (what is listed stays)
    // A deep book on V1USDT (tick 0.001), published as a feed handler would.
    const key = await newPublishKey(baseUrl, ["V1USDT"]);
    const at = Date.now();
    const { createHmac } = await import("node:crypto");
    const signature = createHmac("sha256", key.secret).update(`${at}\nGET\n/v1/publish\n`).digest("hex");
    const channel = new WebSocket(`${wsDialect.replace(/\/binance$/, "")}/v1/publish?apiKey=${key.id}&timestamp=${at}&signature=${signature}`);
    await new Promise((resolve, reject) => channel.on("open", resolve).on("error", reject));
    const side = (from: number, step: number) => Array.from({ length: 1500 }, (_, i) => [((from + step * i) / 1000).toFixed(3), "1.00"]);
    const sequence = 1_000_000 + (at % 1_000_000);
    const answered = new Promise<any>((resolve) => channel.on("message", (data) => resolve(JSON.parse(String(data)))));
    channel.send(JSON.stringify({ id: 1, symbol: "V1USDT", book: { type: "snapshot", sequence, bids: side(100_000, -1), asks: side(100_001, 1) } }));
    expect((await answered).result, "the deep book applied").toMatchObject({ book: "applied" });
    channel.close();
    await until(async () => ((await exchange.loadMarkets(true))["V149/USDT"] ? true : undefined), { what: "the listing in CCXT's markets" });
    // Read back through the native API first: CCXT weighs a 5000-level depth as Binance does (250), so each of its calls waits.
    const nativeDepth = async () =>
      (
        (await (await fetch(`${baseUrl}/binance/api/v3/depth?symbol=V1USDT&limit=1`, { headers: { "CF-Connecting-IP": "198.18.151.2" } })).json()) as {
          lastUpdateId: number;
        }
      ).lastUpdateId;
    await until(async () => ((await nativeDepth()) === sequence ? true : undefined), { what: "the deep book read back" });
    // Paced as the configuration says (every request one, docs/binance.md#limits): CCXT's waits
    // after these two are 200 ms each, not Binance's weights 250 and 80 (about 50 s at rateLimit 1000).
    const costOf = (path: string, params: Record<string, unknown>) =>
      (exchange as any).calculateRateLimiterCost("public", "GET", path, params, (exchange as any).api.public.get[path]);
    expect(
      [costOf("depth", { symbol: "V1USDT", limit: 5000 }), costOf("ticker/24hr", { symbols: "[]" }), costOf("klines", { symbol: "V1USDT" })],
      "CCXT's cost of a deep book, of many tickers, of candles (× rateLimit: its wait in ms)",
    ).toEqual([0.2, 0.2, 0.2]);
    const book = await exchange.fetchOrderBook("V1/USDT", 5000);
    expect([book.bids.length, book.asks.length], "levels a side").toEqual([1500, 1500]);
    const symbols = Array.from({ length: 150 }, (_, i) => `V${i}/USDT`);
    const tickers = await exchange.fetchTickers(symbols);
    expect(Object.keys(tickers).sort(), "a ticker for each of the 150").toEqual([...symbols].sort());
  }, 120_000);

  it("watchOrderBookForSymbols over 250 symbols on one connection (CCXT takes 200 a call: two calls, the first one SUBSCRIBE over 4 KiB), and a book comes", async () => {
    const symbols = Array.from({ length: 250 }, (_, i) => `V${i}/USDT`);
    await listVenue({ url: baseUrl, token: adminToken(), count: 250 }); // V0USDT … V249USDT (the first 150 listed by the test above)
    await exchange.loadHttpProxyAgent();
    await until(async () => ((await exchange.loadMarkets(true))["V249/USDT"] ? true : undefined), { what: "the listing in CCXT's markets" });
    const key = await newPublishKey(baseUrl, ["V2USDT"]);
    const { createHmac } = await import("node:crypto");
    const at = Date.now();
    const signature = createHmac("sha256", key.secret).update(`${at}\nGET\n/v1/publish\n`).digest("hex");
    const channel = new WebSocket(`${wsDialect.replace(/\/binance$/, "")}/v1/publish?apiKey=${key.id}&timestamp=${at}&signature=${signature}`);
    await new Promise((resolve, reject) => channel.on("open", resolve).on("error", reject));
    const answers: any[] = [];
    channel.on("message", (data) => answers.push(JSON.parse(String(data))));
    const sequence = 2_000_000 + (at % 1_000_000);
    channel.send(JSON.stringify({ id: 1, symbol: "V2USDT", book: { type: "snapshot", sequence, bids: [["99.990", "1.00"]], asks: [["100.010", "1.00"]] } }));
    await until(() => answers.find((a) => a.id === 1)?.result, { what: "the V2USDT book" });
    const watched = Promise.race([exchange.watchOrderBookForSymbols(symbols.slice(0, 200)), exchange.watchOrderBookForSymbols(symbols.slice(200))]);
    // Once subscribed (the subscribe's answer came back), V2USDT moves: its diff makes CCXT take the book.
    await until(() => Object.values(exchange.clients).some((client: any) => Object.keys(client.subscriptions ?? {}).length >= 2) || undefined, {
      what: "the two subscriptions",
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    channel.send(JSON.stringify({ id: 2, symbol: "V2USDT", book: { type: "delta", sequence: sequence + 1, bids: [["99.980", "2.00"]], asks: [] } }));
    const book = await watched;
    expect(symbols, "a book of the 250 came").toContain(book.symbol);
    const streamClients = Object.keys(exchange.clients).filter((url) => url.includes("/binance/ws") && !url.includes("ws-api"));
    expect(streamClients, "stream connections CCXT opened").toHaveLength(1);
    channel.close();
  }, 120_000);
});

describe("CCXT configured as docs/binance.md#ccxt says: no URL, option or key reaches Binance", () => {
  const headers = { "CF-Connecting-IP": "198.18.150.10" };
  const configured = (extra: Record<string, unknown> = {}) => {
    const config = ccxtConfig(baseUrl);
    return new ccxt.pro.binance({
      ...config,
      ...extra,
      headers,
      options: { ...config.options, ws: { ...config.options.ws, options: { headers } } },
    });
  };
  /** Every URL in CCXT's table that still names Binance, as `path = url`. */
  const binanceUrls = (urls: unknown): string[] => {
    const left: string[] = [];
    const walk = (value: unknown, path: string) => {
      if (typeof value === "string") {
        if (/binance\.(com|vision)|binancefuture\.com/i.test(value)) left.push(`${path} = ${value}`);
      } else if (value && typeof value === "object") for (const [key, inner] of Object.entries(value)) walk(inner, path ? `${path}.${key}` : key);
    };
    walk(urls, "");
    return left;
  };

  it("leaves no Binance address anywhere in CCXT's URL table: live, sandbox, demo trading", () => {
    const exchange = configured();
    expect(binanceUrls(exchange.urls), "URLs still pointing at Binance").toEqual([]);
    // CCXT's own table is not empty of them: the walk would find one (the check can fail).
    expect(binanceUrls(new ccxt.pro.binance().urls).length, "Binance URLs in CCXT's defaults").toBeGreaterThan(50);
    exchange.setSandboxMode(true);
    expect(binanceUrls(exchange.urls), "URLs pointing at Binance in sandbox mode").toEqual([]);
    const demo = configured();
    demo.enableDemoTrading(true);
    expect(binanceUrls(demo.urls), "URLs pointing at Binance in demo trading").toEqual([]);
  });

  it("the streams it does not serve (futures, options, the futures WebSocket API) refuse the upgrade at once with -1020", async () => {
    const { ws } = ccxtConfig(baseUrl).urls.api;
    const refusal = (url: string) =>
      new Promise<string>((resolve) => {
        const socket = new WebSocket(url, { headers });
        socket.on("open", () => {
          socket.close();
          resolve("opened");
        });
        socket.on("unexpected-response", (_request, response) => {
          let body = "";
          response.on("data", (chunk) => {
            body += chunk;
          });
          response.on("end", () => resolve(`${response.statusCode} ${body}`));
        });
        socket.on("error", (error) => resolve(`error ${error.message}`));
      });
    for (const url of [ws.future, ws.delivery, ws.option, ws["ws-api"].future]) {
      expect(await refusal(url), url).toMatch(/^404 .*"code":-1020/);
    }
  });

  it("with a user's keys: loadMarkets works, fetchBalance, a margin call and sandbox mode are refused by this service with Binance's -1020", async () => {
    // Keys of the real exchange's shape: were any request to leave, they would go with it.
    // CCXT's own pacing off: five requests, within the address's 10 a second (fetchBalance weighs 20, 4 s of waiting).
    const exchange = configured({ apiKey: "A".repeat(64), secret: "B".repeat(64), enableRateLimit: false });
    try {
      const markets = await exchange.loadMarkets();
      expect(markets["BTC/USDT"]?.id, "BTCUSDT from this venue, with keys set").toBe("BTCUSDT");
      const refusal = (call: Promise<unknown>) =>
        call.then(
          () => "answered",
          (error: Error) => `${error.constructor.name}: ${error.message}`,
        );
      expect(await refusal(exchange.fetchBalance()), "fetchBalance").toMatch(/"code":-1020/);
      expect(await refusal(exchange.fetchBalance({ type: "margin" })), "a margin balance").toMatch(/"code":-1020/);
      expect(await refusal(exchange.fetchOpenOrders("BTC/USDT")), "open orders").toMatch(/"code":-1020/);
      exchange.setSandboxMode(true);
      expect(await refusal(exchange.fetchBalance()), "fetchBalance in sandbox mode").toMatch(/"code":-1020/);
    } finally {
      await exchange.close();
    }
  }, 60_000);
});
