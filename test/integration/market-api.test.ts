import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { defaultMarkets, hostOf } from "../support/registry";
import { withoutMoment } from "../support/window-moment";

const MARKETS = await defaultMarkets();

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Seeds a market through the real ingest path (the one POST /v1/ingest uses). */
async function seed(symbol: string, price: string, extra: { sequence?: number; time?: number } = {}) {
  const time = extra.time ?? Date.now() - 1000;
  return ingest(env, "*", {
    symbol,
    trades: [
      { id: `${symbol}-${time}-a`, price, quantity: "1", side: "buy", time: time - 10 },
      { id: `${symbol}-${time}-b`, price, quantity: "2", side: "sell", time },
    ],
    book: {
      type: "snapshot",
      sequence: extra.sequence ?? 1,
      bids: [
        ["1", "5"],
        ["0.5", "1"],
      ],
      asks: [["100000", "3"]],
    },
  });
}

describe("public market endpoints answer the documented shapes", () => {
  it("GET /api/ticker/{pair}: every field, decimals as strings at the market's scales", async () => {
    await seed("BTCUSDT", "97000.1");
    const { status, body, response } = await callJson("/api/ticker/btc-usdt");
    expect(status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(body).toMatchObject({
      symbol: "BTCUSDT",
      lastPrice: "97000.10",
      openPrice: "97000.10",
      high24h: "97000.10",
      low24h: "97000.10",
      change24h: "0.00",
      changePercent24h: "0.00",
      volume24h: "3.00000",
      quoteVolume24h: "291000.3000000",
      tradeCount24h: 2,
      bestBid: "1.00",
      bestAsk: "100000.00",
    });
    expect(body.closeTime).toBeGreaterThanOrEqual(body.openTime + 86_400_000);
    for (const field of ["lastPrice", "volume24h", "change24h", "high24h", "low24h", "openPrice", "quoteVolume24h"]) expect(body[field]).toMatch(DECIMAL);
  });

  it("GET /api/orderbook/{pair}: sorted levels, depth, sequence", async () => {
    await ingest(env, "*", {
      symbol: "ETHUSDT",
      book: {
        type: "snapshot",
        sequence: 41,
        bids: [
          ["3399", "1"],
          ["3400", "2"],
          ["3398.5", "3"],
        ],
        asks: [
          ["3401", "1"],
          ["3400.01", "0.5"],
        ],
      },
    });
    await ingest(env, "*", { symbol: "ETHUSDT", book: { type: "delta", sequence: 42, bids: [["3398.5", "0"]], asks: [["3402", "7"]] } });
    const { status, body } = await callJson("/api/orderbook/ETH_USDT?depth=2");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      symbol: "ETHUSDT",
      sequence: 42,
      bids: [
        ["3400.00", "2.0000"],
        ["3399.00", "1.0000"],
      ],
      asks: [
        ["3400.01", "0.5000"],
        ["3401.00", "1.0000"],
      ],
    });
    expect(typeof body.timestamp).toBe("number");
  });

  it("a delta that skips a sequence is refused with SEQUENCE_GAP and changes nothing", async () => {
    await ingest(env, "*", { symbol: "XRPUSDT", book: { type: "snapshot", sequence: 5, bids: [["0.5", "10"]], asks: [["0.6", "10"]] } });
    await expect(ingest(env, "*", { symbol: "XRPUSDT", book: { type: "delta", sequence: 7, bids: [["0.55", "1"]], asks: [] } })).rejects.toMatchObject({
      code: "SEQUENCE_GAP",
      status: 409,
    });
    await expect(ingest(env, "*", { symbol: "XRPUSDT", book: { type: "delta", sequence: 6, bids: [["0.7", "1"]], asks: [] } })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    const { body } = await callJson("/api/orderbook/XRPUSDT");
    expect(body).toMatchObject({ sequence: 5, bids: [["0.5000", "10.0"]], asks: [["0.6000", "10.0"]] });
  });

  it("ingest skips trade ids already seen and refuses prices finer than the market's scale", async () => {
    const time = Date.now() - 500;
    const trade = { id: "dup-1", price: "150.5", quantity: "1.25", side: "buy" as const, time };
    expect(await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade, trade] })).toMatchObject({ acceptedTrades: 1, duplicateTrades: 1 });
    expect(await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade] })).toMatchObject({ acceptedTrades: 0, duplicateTrades: 1 });
    await expect(ingest(env, "*", { symbol: "SOLUSDT", trades: [{ ...trade, id: "fine", price: "150.0001" }] })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
      extras: { errors: [{ path: "trades.0.price", message: "has more than 3 decimals" }] },
    });
    await expect(ingest(env, "*", { symbol: "SOLUSDT", trades: [{ ...trade, id: "zero", quantity: "0" }] })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    const { body } = await callJson("/api/ticker/SOLUSDT");
    expect(body).toMatchObject({ tradeCount24h: 1, volume24h: "1.25", lastPrice: "150.500" });
  });

  it("GET /api/trades/{pair}: newest first, limit", async () => {
    const base = Date.now() - 10_000;
    await ingest(env, "*", {
      symbol: "SOLBTC",
      trades: [0, 1, 2, 3].map((i) => ({
        id: `t${i}`,
        price: "0.0015",
        quantity: "1",
        side: i % 2 ? ("sell" as const) : ("buy" as const),
        time: base + i * 1000,
      })),
    });
    const { status, body } = await callJson("/api/trades/SOL/BTC?limit=3".replace("/BTC", "%2FBTC"));
    expect(status).toBe(200);
    expect(body.map((t: { id: string }) => t.id)).toEqual(["t3", "t2", "t1"]);
    expect(body[0]).toEqual({ tradeId: body[1].tradeId + 1, id: "t3", price: "0.0015000", quantity: "1.00", side: "sell", time: base + 3000 });
    expect(body[2].tradeId, "tradeIds rise by 1 in the order applied").toBe(body[0].tradeId - 2);
  });

  it("GET /api/klines/{pair}: candles per interval from minute buckets", async () => {
    const minute = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000;
    await ingest(env, "*", {
      symbol: "ETHBTC",
      trades: [
        { id: "k1", price: "0.035", quantity: "1", side: "buy", time: minute + 1 },
        { id: "k2", price: "0.036", quantity: "1", side: "buy", time: minute + 60_001 },
        { id: "k3", price: "0.034", quantity: "2", side: "sell", time: minute + 120_001 },
      ],
    });
    const oneMinute = await callJson("/api/klines/ETHBTC?interval=1m&limit=2");
    expect(oneMinute.status).toBe(200);
    expect(oneMinute.body.map((k: { openTime: number }) => k.openTime)).toEqual([minute + 60_000, minute + 120_000]);
    const fifteen = await callJson(`/api/klines/ETHBTC?interval=15m&startTime=${minute}`);
    const total = fifteen.body.reduce((n: number, k: { tradeCount: number }) => n + k.tradeCount, 0);
    expect(total).toBe(3);
    // The three minutes may straddle a 15-minute boundary: compare across the candles.
    expect(
      fifteen.body
        .map((k: { high: string }) => k.high)
        .sort()
        .at(-1),
    ).toBe("0.03600");
    expect(fifteen.body.map((k: { low: string }) => k.low).sort()[0]).toBe("0.03400");
  });

  it("GET /api/markets lists every market with status and scales, and the assets", async () => {
    const { status, body } = await callJson("/api/markets");
    expect(status).toBe(200);
    expect(body.markets.map((m: { symbol: string }) => m.symbol)).toEqual(MARKETS.map((m) => m.symbol));
    const { lastUpdateTime, ...btc } = body.markets[0];
    // Earlier tests here published to BTCUSDT: its feed's last word is a time (null before any).
    expect(lastUpdateTime === null || typeof lastUpdateTime === "number", String(lastUpdateTime)).toBe(true);
    expect(btc).toEqual({
      symbol: "BTCUSDT",
      base: "BTC",
      quote: "USDT",
      status: "TRADING",
      priceScale: 2,
      quantityScale: 5,
      tickSize: "0.01",
      stepSize: "0.00001",
      minQty: "0.00001",
      maxQty: "1000",
      minNotional: "0.10",
    });
    expect(body.assets.map((a: { asset: string }) => a.asset)).toEqual(["BTC", "ETH", "SOL", "XRP", "USDT", "USDC"]);
    expect(body.rateLimits).toContainEqual({
      scope: "ip",
      kind: "requests",
      limit: 10,
      windowMs: 1000,
      appliesTo: "/api/*, /binance/*, /account/*, the dashboard's form posts",
    });
    expect(body.rateLimits).toContainEqual({ scope: "apiKey", kind: "connections", limit: 5, windowMs: null, appliesTo: "/v1/ws" });
  });

  it("GET /api/time returns the server time in ms", async () => {
    const before = Date.now();
    const { body } = await callJson("/api/time");
    expect(body.serverTime).toBeGreaterThanOrEqual(before);
  });

  it("GET /api/prices serves the KV snapshot the price index wrote, with asOf", async () => {
    await seed("BTCUSDC", "96990.5");
    const body = await until(
      async () => {
        const answer = (await callJson("/api/prices?quote=usdc")).body;
        return answer.data.length > 0 && answer;
      },
      { intervalMs: 100, what: "a price in the KV snapshot" },
    );
    expect(body.quote).toBe("USDC");
    expect(body.asOf).toBeGreaterThan(0);
    expect(body.data).toContainEqual(expect.objectContaining({ asset: "BTC", price: "96990.50", source: "BTCUSDC" }));
    const stored = await env.PRICES.get("prices/snapshot", "json");
    expect(stored).toMatchObject({ markets: { BTCUSDC: { lastPrice: "96990.50" } } });
  });

  it("a market's data survives eviction of its Durable Object", async () => {
    await ingest(env, "*", {
      symbol: "BTCUSDT",
      trades: [{ id: "persist-1", price: "96000", quantity: "0.5", side: "buy", time: Date.now() }],
      book: { type: "delta", sequence: 2, bids: [["95000", "1"]], asks: [] },
    });
    const before = (await callJson("/api/ticker/BTCUSDT")).body;
    const bookBefore = (await callJson("/api/orderbook/BTCUSDT")).body;
    await evictDurableObject(await hostOf("BTCUSDT"));
    const after = (await callJson("/api/ticker/BTCUSDT")).body;
    const bookAfter = (await callJson("/api/orderbook/BTCUSDT")).body;
    expect(withoutMoment(after as object)).toEqual(withoutMoment(before as object));
    expect({ ...bookAfter, timestamp: 0 }).toEqual({ ...bookBefore, timestamp: 0 });
    expect(after).toMatchObject({ lastPrice: "96000.00", tradeCount24h: 3 });
    // Trade ids are remembered across the eviction too.
    expect(
      await ingest(env, "*", { symbol: "BTCUSDT", trades: [{ id: "persist-1", price: "1", quantity: "1", side: "buy", time: Date.now() }] }),
    ).toMatchObject({
      duplicateTrades: 1,
    });
  });
});

describe("market status (docs/api.md)", () => {
  it("a halted market serves its data but refuses ingest; a delisted one is UNKNOWN_SYMBOL; delisting is final", async () => {
    await seed("XRPUSDT", "0.61", { sequence: 10 });
    const setStatus = (status: string) =>
      callJson("/admin/markets/XRPUSDT/status", { method: "PUT", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify({ status }) });
    expect((await setStatus("HALTED")).status).toBe(200);
    expect((await call("/api/ticker/XRPUSDT")).status).toBe(200);
    await expect(ingest(env, "*", { symbol: "XRPUSDT", trades: [] })).rejects.toMatchObject({ code: "MARKET_NOT_TRADING", status: 409 });
    expect((await setStatus("DELISTED")).status).toBe(200);
    const { status, body } = await callJson("/api/orderbook/XRPUSDT");
    expect(status).toBe(404);
    expect(body.code).toBe("UNKNOWN_SYMBOL");
    expect((await setStatus("TRADING")).body).toMatchObject({ status: 409, code: "MARKET_NOT_TRADING" });
    const markets = (await callJson("/api/markets")).body.markets;
    expect(markets.find((m: { symbol: string }) => m.symbol === "XRPUSDT").status).toBe("DELISTED");
  });
});

describe("errors are problem+json with the documented codes (section 8)", () => {
  async function expectProblem(path: string, status: number, code: string, init?: RequestInit) {
    const response = await call(path, init);
    expect(response.status, path).toBe(status);
    expect(response.headers.get("Content-Type")).toBe("application/problem+json");
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status, code, type: expect.stringMatching(/^\/docs\/errors#/), title: expect.any(String), detail: expect.any(String) });
    expect(body.requestId).toBe(response.headers.get("X-Request-Id"));
    return body;
  }

  it("malformed pairs are 400 INVALID_SYMBOL; well-formed unlisted ones 404 UNKNOWN_SYMBOL", async () => {
    await expectProblem("/api/ticker/BTC--USDT", 400, "INVALID_SYMBOL");
    await expectProblem(`/api/ticker/${"A".repeat(33)}`, 400, "INVALID_SYMBOL");
    await expectProblem("/api/orderbook/BTC%20USDT", 400, "INVALID_SYMBOL");
    await expectProblem("/api/ticker/DOGEUSDT", 404, "UNKNOWN_SYMBOL");
    await expectProblem("/api/trades/btc-eur", 404, "UNKNOWN_SYMBOL");
  });

  it("bad parameters are 400 VALIDATION_FAILED with errors naming them", async () => {
    const depth = await expectProblem("/api/orderbook/BTCUSDT?depth=0", 400, "VALIDATION_FAILED");
    expect(depth.errors).toEqual([expect.objectContaining({ path: "query.depth" })]);
    await expectProblem("/api/orderbook/BTCUSDT?depth=1001", 400, "VALIDATION_FAILED");
    await expectProblem("/api/orderbook/BTCUSDT?depth=1e2", 400, "VALIDATION_FAILED");
    await expectProblem("/api/trades/BTCUSDT?limit=-1", 400, "VALIDATION_FAILED");
    const interval = await expectProblem("/api/klines/BTCUSDT?interval=2m", 400, "VALIDATION_FAILED");
    expect(interval.errors).toEqual([expect.objectContaining({ path: "query.interval" })]);
    await expectProblem("/api/klines/BTCUSDT?startTime=10&endTime=5", 400, "VALIDATION_FAILED");
    await expectProblem("/api/prices?assets=BTC,,ETH", 400, "VALIDATION_FAILED");
    await expectProblem("/api/prices?quote=US-DT", 400, "VALIDATION_FAILED");
  });

  it("unknown paths are 404 NOT_FOUND; known paths with another method 405 with Allow", async () => {
    await expectProblem("/api/nothing-here", 404, "NOT_FOUND");
    await expectProblem("/api/tickers", 404, "NOT_FOUND");
    const response = await call("/api/ticker/BTCUSDT", { method: "POST", body: "{}" });
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toContain("GET");
    expect(await response.json()).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
  });

  it("echoes a valid X-Request-Id and replaces an invalid one", async () => {
    const echoed = await call("/api/time", { headers: { "X-Request-Id": "client-req-42" } });
    expect(echoed.headers.get("X-Request-Id")).toBe("client-req-42");
    const replaced = await call("/api/time", { headers: { "X-Request-Id": "bad id with spaces" } });
    expect(replaced.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("OpenAPI and docs", () => {
  it("/openapi.json is OpenAPI 3.1 and describes every public endpoint", async () => {
    const { status, body } = await callJson("/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toBe("3.1.0");
    for (const path of [
      "/api/prices",
      "/api/orderbook/{pair}",
      "/api/ticker/{pair}",
      "/api/trades/{pair}",
      "/api/klines/{pair}",
      "/api/markets",
      "/api/time",
    ]) {
      expect(body.paths[path]?.get, path).toBeDefined();
    }
    expect(body.components.schemas.Ticker.properties.lastPrice.type).toBe("string");
  });

  it("/docs is a self-contained HTML page: no external script or style", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain("/openapi.json");
    expect(html).not.toMatch(/<(script|link)[^>]+(src|href)="https?:/);
  });
});
