import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { BINANCE_ERROR_CODES } from "../../src/binance/errors";
import {
  BinanceAggTradeSchema,
  BinanceAvgPriceSchema,
  BinanceBookTickerSchema,
  BinanceDepthSchema,
  BinanceKlineSchema,
  BinanceMiniTickerSchema,
  BinancePriceSchema,
  BinanceTickerSchema,
  BinanceTradeSchema,
  ExchangeInfoSchema,
} from "../../src/binance/schemas";
import { objectCalls } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { defaultMarkets } from "../support/registry";

const MARKETS = await defaultMarkets();
const V3 = "/binance/api/v3";

/** Trades at known prices and a book, through the real ingest path. */
async function seed(symbol: string) {
  const now = Date.now();
  await ingest(env, "*", {
    symbol,
    trades: [
      { id: `${symbol}-1`, price: "100.00", quantity: "1.00000", side: "buy", time: now - 3000 },
      { id: `${symbol}-2`, price: "102.00", quantity: "3.00000", side: "sell", time: now - 2000 },
      { id: `${symbol}-3`, price: "101.00", quantity: "0.50000", side: "buy", time: now - 1000 },
    ],
    book: {
      type: "snapshot",
      sequence: 7,
      bids: [
        ["100.50", "2.00000"],
        ["100.00", "1.00000"],
      ],
      asks: [["101.50", "4.00000"]],
    },
  });
}

describe("the Binance dialect's REST answers are the service's own data in Binance's shapes (docs/binance.md)", () => {
  it("exchangeInfo: every market with Binance's status, assets, precisions and the trading rules as filters", async () => {
    const { status, body } = await callJson(`${V3}/exchangeInfo`);
    expect(status).toBe(200);
    const info = ExchangeInfoSchema.parse(body);
    expect(info.symbols.map((s) => s.symbol)).toEqual(MARKETS.map((m) => m.symbol));
    for (const market of MARKETS) {
      const entry = info.symbols.find((s) => s.symbol === market.symbol)!;
      expect(entry, market.symbol).toMatchObject({
        status: "TRADING",
        baseAsset: market.base,
        quoteAsset: market.quote,
        baseAssetPrecision: market.quantityScale,
      });
      expect(entry.filters, market.symbol).toEqual([
        { filterType: "PRICE_FILTER", minPrice: market.rules.tickSize, maxPrice: (0).toFixed(market.priceScale), tickSize: market.rules.tickSize },
        { filterType: "LOT_SIZE", minQty: market.rules.minQty, maxQty: market.rules.maxQty, stepSize: market.rules.stepSize },
        { filterType: "MIN_NOTIONAL", minNotional: market.rules.minNotional, applyToMarket: true, avgPriceMins: 0 },
      ]);
    }
    expect(info.rateLimits).toContainEqual({ rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit: 10 });
    const one = await callJson(`${V3}/exchangeInfo?symbol=ETHUSDT`);
    expect(one.body.symbols.map((s: { symbol: string }) => s.symbol)).toEqual(["ETHUSDT"]);
    const two = await callJson(`${V3}/exchangeInfo?symbols=${encodeURIComponent('["SOLUSDT","BTCUSDT"]')}`);
    expect(two.body.symbols.map((s: { symbol: string }) => s.symbol)).toEqual(["SOLUSDT", "BTCUSDT"]);
  });

  it("exchangeInfo says HALT for a halted market and BREAK for a delisted one, as the operator set them", async () => {
    const setStatus = (pair: string, status: string) =>
      callJson(`/admin/markets/${pair}/status`, { method: "PUT", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify({ status }) });
    expect((await setStatus("XRPUSDT", "HALTED")).status).toBe(200);
    expect((await setStatus("SOLBTC", "DELISTED")).status).toBe(200);
    const statuses = Object.fromEntries(
      ExchangeInfoSchema.parse((await callJson(`${V3}/exchangeInfo`)).body).symbols.map((s) => [s.symbol, [s.status, s.isSpotTradingAllowed]]),
    );
    expect(statuses).toMatchObject({ XRPUSDT: ["HALT", false], SOLBTC: ["BREAK", false], BTCUSDT: ["TRADING", true] });
    const halted = (await callJson(`${V3}/exchangeInfo?symbolStatus=HALT`)).body.symbols.map((s: { symbol: string }) => s.symbol);
    expect(halted).toEqual(["XRPUSDT"]);
    // A halted market's data stays readable; a delisted one's is an invalid symbol, as on Binance.
    expect((await callJson(`${V3}/depth?symbol=XRPUSDT`)).status).toBe(200);
    const gone = await callJson(`${V3}/depth?symbol=SOLBTC`);
    expect([gone.status, gone.body.code], JSON.stringify(gone.body)).toEqual([400, -1121]);
    // Named in a list, a delisted market is an invalid symbol too, never silently left out.
    const listed = await callJson(`${V3}/ticker/price?symbols=${encodeURIComponent('["BTCUSDT","SOLBTC"]')}`);
    expect([listed.status, listed.body.code], "a delisted market in symbols").toEqual([400, -1121]);

    // symbolStatus: one market not in it is -1220; a list or every market, those in it.
    const refused = (await callJson(`${V3}/depth?symbol=BTCUSDT&symbolStatus=HALT`)).body;
    expect(refused, "a TRADING market asked as HALT").toEqual({ code: -1220, msg: "The symbol's status does not match the requested symbolStatus." });
    expect((await callJson(`${V3}/depth?symbol=XRPUSDT&symbolStatus=HALT&limit=1`)).status, "a HALT market asked as HALT").toBe(200);
    const prices = (await callJson(`${V3}/ticker/price?symbolStatus=HALT`)).body.map((p: { symbol: string }) => p.symbol);
    expect(prices, "every market in HALT").toEqual(["XRPUSDT"]);
    const some = (await callJson(`${V3}/ticker/24hr?symbols=${encodeURIComponent('["BTCUSDT","XRPUSDT"]')}&symbolStatus=TRADING`)).body;
    expect(
      some.map((t: { symbol: string }) => t.symbol),
      "the named markets in TRADING",
    ).toEqual(["BTCUSDT"]);
    expect((await callJson(`${V3}/exchangeInfo?symbol=BTCUSDT&symbolStatus=TRADING`)).body.code, "exchangeInfo: symbol with symbolStatus").toBe(-1128);
    expect((await callJson(`${V3}/ticker/bookTicker?symbolStatus=OPEN`)).body, "a status Binance does not have").toEqual({
      code: -1122,
      msg: "Invalid symbolStatus.",
    });
    expect((await callJson(`${V3}/ticker?symbolStatus=TRADING`)).body.code, "ticker needs symbol or symbols, symbolStatus or not").toBe(-1102);
  });

  it("reads every parameter it is sent, as Binance: one it does not read is -1104, one sent twice or a symbol named twice -1101", async () => {
    expect((await callJson(`${V3}/depth?symbol=BTCUSDT&limt=5`)).body, "a misspelt limit").toEqual({
      code: -1104,
      msg: "Not all sent parameters were read; read '1' parameter(s) but was sent '2'.",
    });
    expect((await callJson(`${V3}/time?timestamp=1`)).body.code, "a parameter of a signed call on a public one").toBe(-1104);
    expect((await callJson(`${V3}/depth?symbol=BTCUSDT&symbol=ETHUSDT`)).body, "symbol sent twice").toEqual({
      code: -1101,
      msg: "Duplicate values for a parameter detected.",
    });
    const twice = await callJson(`${V3}/ticker/price?symbols=${encodeURIComponent('["BTCUSDT","BTCUSDT"]')}`);
    expect([twice.status, twice.body], "a symbol named twice").toEqual([400, { code: -1101, msg: "Duplicate values for a parameter detected." }]);
    // Every parameter an endpoint documents is read.
    const full = await callJson(`${V3}/klines?symbol=BTCUSDT&interval=1m&startTime=0&endTime=${Date.now()}&timeZone=0&limit=2`);
    expect(full.status, JSON.stringify(full.body)).toBe(200);
  });

  it("ping and time ask nothing of the registry (a cold isolate whose registry cannot be read still answers them); a market read does", async () => {
    const app = createApp();
    const ask = async (path: string) => {
      const before = objectCalls.registry;
      const response = await app.request(path, { headers: { "CF-Connecting-IP": "192.0.2.77" } }, { ...env, REGISTRY_REFRESH_MS: "0" });
      return [response.status, objectCalls.registry - before];
    };
    expect(await ask(`${V3}/ping`), "ping: [status, registry calls]").toEqual([200, 0]);
    expect(await ask(`${V3}/time`), "time: [status, registry calls]").toEqual([200, 0]);
    expect(await ask(`${V3}/depth?symbol=BTCUSDT&limit=1`), "depth: [status, registry calls]").toEqual([200, 1]);
  });

  it("depth is the order book with lastUpdateId = its sequence; trades oldest first; aggTrades one per trade; klines as rows", async () => {
    await seed("BTCUSDC");
    const native = (await callJson(`/api/orderbook/BTCUSDC?depth=5`)).body;
    const depth = BinanceDepthSchema.parse((await callJson(`${V3}/depth?symbol=BTCUSDC&limit=5`)).body);
    expect(depth).toEqual({ lastUpdateId: native.sequence, bids: native.bids, asks: native.asks });
    expect(depth.lastUpdateId).toBe(7);

    const trades = (await callJson(`${V3}/trades?symbol=BTCUSDC`)).body.map((t: unknown) => BinanceTradeSchema.parse(t));
    expect(
      trades.map((t: { id: number; price: string; qty: string; quoteQty: string; isBuyerMaker: boolean }) => [
        t.id,
        t.price,
        t.qty,
        t.quoteQty,
        t.isBuyerMaker,
      ]),
    ).toEqual([
      [1, "100.00", "1.00000", "100.0000000", false],
      [2, "102.00", "3.00000", "306.0000000", true],
      [3, "101.00", "0.50000", "50.5000000", false],
    ]);
    const history = (await callJson(`${V3}/historicalTrades?symbol=BTCUSDC&fromId=2&limit=1`)).body;
    expect(history.map((t: { id: number }) => t.id)).toEqual([2]);
    const aggregates = (await callJson(`${V3}/aggTrades?symbol=BTCUSDC&fromId=2`)).body.map((t: unknown) => BinanceAggTradeSchema.parse(t));
    expect(aggregates.map((a: { a: number; f: number; l: number; p: string }) => [a.a, a.f, a.l, a.p])).toEqual([
      [2, 2, 2, "102.00"],
      [3, 3, 3, "101.00"],
    ]);

    const candles = (await callJson(`/api/klines/BTCUSDC?interval=1m`)).body;
    const rows = (await callJson(`${V3}/klines?symbol=BTCUSDC&interval=1m`)).body.map((r: unknown) => BinanceKlineSchema.parse(r));
    expect(rows).toEqual(
      candles.map((k: Record<string, string | number>) => [
        k.openTime,
        k.open,
        k.high,
        k.low,
        k.close,
        k.volume,
        k.closeTime,
        k.quoteVolume,
        k.tradeCount,
        k.takerBuyVolume,
        k.takerBuyQuoteVolume,
        "0",
      ]),
    );
    // The takers bought 1 at 100 and 0.5 at 101 (and sold 3 at 102).
    const sum = (column: number) => rows.reduce((total: number, row: unknown[]) => total + Number(row[column]), 0);
    expect([sum(9), sum(10)]).toEqual([1.5, 150.5]);
    expect((await callJson(`${V3}/uiKlines?symbol=BTCUSDC&interval=1m`)).body).toEqual(rows);
    // Σ price × quantity / Σ quantity = (100 + 306 + 50.5) / 4.5
    expect(BinanceAvgPriceSchema.parse((await callJson(`${V3}/avgPrice?symbol=BTCUSDC`)).body)).toMatchObject({ mins: 5, price: "101.44" });
  });

  it("ticker/24hr carries every Binance field from the ticker; MINI, price and bookTicker for one, some or all", async () => {
    await seed("BTCUSDT");
    const native = (await callJson(`/api/ticker/BTCUSDT`)).body;
    const full = BinanceTickerSchema.parse((await callJson(`${V3}/ticker/24hr?symbol=BTCUSDT`)).body);
    expect(full).toMatchObject({
      symbol: "BTCUSDT",
      priceChange: native.change24h,
      priceChangePercent: native.changePercent24h,
      lastPrice: "101.00",
      lastQty: "0.50000",
      bidPrice: "100.50",
      bidQty: "2.00000",
      askPrice: "101.50",
      askQty: "4.00000",
      openPrice: "100.00",
      highPrice: "102.00",
      lowPrice: "100.00",
      volume: "4.50000",
      quoteVolume: "456.5000000",
      weightedAvgPrice: "101.44",
      openTime: native.openTime,
      count: 3,
    });
    const mini = BinanceMiniTickerSchema.strict().parse((await callJson(`${V3}/ticker/24hr?symbol=BTCUSDT&type=MINI`)).body);
    expect(mini).toMatchObject({ lastPrice: "101.00", volume: "4.50000", count: 3 });

    const some = (await callJson(`${V3}/ticker/24hr?symbols=${encodeURIComponent('["BTCUSDT","ETHBTC"]')}`)).body;
    expect(some.map((t: { symbol: string }) => t.symbol)).toEqual(["BTCUSDT", "ETHBTC"]);
    // A market that never traded: zeros at its scales, as Binance writes an empty side.
    const ethBtc = MARKETS.find((m) => m.symbol === "ETHBTC")!;
    expect(BinanceTickerSchema.parse(some[1])).toMatchObject({
      lastPrice: (0).toFixed(ethBtc.priceScale),
      bidPrice: (0).toFixed(ethBtc.priceScale),
      bidQty: (0).toFixed(ethBtc.quantityScale),
    });
    // Every market that is not delisted, in listing order (another test here delists one).
    const listed = (await callJson("/api/markets")).body.markets
      .filter((m: { status: string }) => m.status !== "DELISTED")
      .map((m: { symbol: string }) => m.symbol);
    const all = (await callJson(`${V3}/ticker/24hr`)).body;
    expect(all.map((t: unknown) => BinanceTickerSchema.parse(t).symbol)).toEqual(listed);

    expect(BinancePriceSchema.parse((await callJson(`${V3}/ticker/price?symbol=BTCUSDT`)).body)).toEqual({ symbol: "BTCUSDT", price: "101.00" });
    // The same request after the market moved: a new answer, not the translation of the old one.
    await ingest(env, "*", { symbol: "BTCUSDT", trades: [{ id: "BTCUSDT-4", price: "103.00", quantity: "1.00000", side: "buy", time: Date.now() }] });
    expect((await callJson(`${V3}/ticker/price?symbol=BTCUSDT`)).body).toEqual({ symbol: "BTCUSDT", price: "103.00" });
    expect((await callJson(`${V3}/ticker/price`)).body.length).toBe(listed.length);
    expect(BinanceBookTickerSchema.parse((await callJson(`${V3}/ticker/bookTicker?symbol=BTCUSDT`)).body)).toEqual({
      symbol: "BTCUSDT",
      bidPrice: "100.50",
      bidQty: "2.00000",
      askPrice: "101.50",
      askQty: "4.00000",
    });
  });
});

describe("the Binance dialect's errors are Binance's (docs/binance.md#errors)", () => {
  const cases: [string, number, number][] = [
    [`${V3}/depth?symbol=NOPEUSDT`, 400, -1121],
    [`${V3}/ticker/24hr?symbols=${encodeURIComponent('["BTCUSDT","NOPE"]')}`, 400, -1121],
    [`${V3}/depth?symbol=btcusdt`, 400, -1100],
    [`${V3}/depth?symbol=BTCUSDT&limit=abc`, 400, -1100],
    [`${V3}/ticker/24hr?symbols=BTCUSDT`, 400, -1100],
    [`${V3}/depth`, 400, -1102],
    [`${V3}/depth?symbol=`, 400, -1102],
    [`${V3}/klines?symbol=BTCUSDT`, 400, -1102],
    [`${V3}/klines?symbol=BTCUSDT&interval=2m`, 400, -1120],
    [`${V3}/klines?symbol=BTCUSDT&interval=1y`, 400, -1120],
    [`${V3}/klines?symbol=BTCUSDT&interval=1m&timeZone=15`, 400, -1100],
    [`${V3}/ticker?symbol=BTCUSDT&windowSize=1d2h`, 400, -1100],
    [`${V3}/ticker?symbol=BTCUSDT&windowSize=8d`, 400, -1100],
    [`${V3}/ticker`, 400, -1102],
    [`${V3}/ticker/tradingDay?symbol=BTCUSDT&timeZone=UTC`, 400, -1100],
    [`${V3}/ticker/tradingDay`, 400, -1102],
    [`${V3}/ticker/price?symbol=BTCUSDT&symbols=${encodeURIComponent('["BTCUSDT"]')}`, 400, -1128],
    [`${V3}/aggTrades?symbol=BTCUSDT&fromId=1&startTime=1`, 400, -1128],
    [`${V3}/account`, 404, -1020],
    ["/binance/sapi/v1/capital/config/getall", 404, -1020],
  ];
  it.each(cases)("%s → %i %i", async (path, status, code) => {
    const response = await callJson(path);
    expect([response.status, response.body.code], JSON.stringify(response.body)).toEqual([status, code]);
    expect(response.response.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(typeof response.body.msg).toBe("string");
  });

  it("over the limit: 429 with -1003 and Retry-After; the limit is the address's, shared with /api", async () => {
    const ip = "198.18.77.1";
    for (let i = 0; i < 5; i++) expect((await call("/api/time", { ip })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await call(`${V3}/time`, { ip })).status).toBe(200);
    const refused = await callJson(`${V3}/ping`, { ip });
    expect([refused.status, refused.body.code]).toEqual([429, -1003]);
    expect(Number(refused.response.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(refused.response.headers.get("RateLimit-Remaining")).toBe("0");
  });

  it("no client input gets a 5xx: random parameters on every route answer 200 or a Binance error with a known code", async () => {
    const paths = [
      "depth",
      "trades",
      "historicalTrades",
      "aggTrades",
      "klines",
      "uiKlines",
      "avgPrice",
      "ticker/24hr",
      "ticker",
      "ticker/tradingDay",
      "ticker/price",
      "ticker/bookTicker",
      "exchangeInfo",
    ];
    const value = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.constantFrom(
        "BTCUSDT",
        "btcusdt",
        "1m",
        "3m",
        "0",
        "-1",
        "99999999999999999999999",
        '["BTCUSDT"]',
        "[]",
        '["x"]',
        "MINI",
        "FULL",
        "%",
        "null",
        "1M",
        "1w",
        "+08:00",
        "05:45",
        "4h",
        "7d",
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.dictionary(
          fc.constantFrom("symbol", "symbols", "limit", "interval", "fromId", "startTime", "endTime", "type", "timeZone", "symbolStatus", "windowSize"),
          value,
          {
            maxKeys: 4,
          },
        ),
        async (path, query) => {
          const target = `${V3}/${path}?${new URLSearchParams(query)}`;
          const { status, body } = await callJson(target);
          expect(status, target).toBeLessThan(500);
          if (status >= 400) expect(BINANCE_ERROR_CODES, `${target}: ${JSON.stringify(body)}`).toContain(body.code);
        },
      ),
      { numRuns: 300 },
    );
  });
});
