import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { newKey, signedCall } from "../support/accounts";
import { call, callJson } from "../support/http";
import { defaultMarkets } from "../support/registry";

const MARKETS = await defaultMarkets();

const DECIMAL = /^(0|[1-9]\d*)(\.\d+)?$/;

async function seedBooks() {
  await ingest(env, "*", {
    symbol: "BTCUSDT",
    book: {
      type: "snapshot",
      sequence: 10,
      bids: [
        ["97000.10", "0.50000"],
        ["96999.00", "1.00000"],
      ],
      asks: [["97001.00", "0.25000"]],
    },
  });
  await ingest(env, "*", { symbol: "ETHUSDT", book: { type: "snapshot", sequence: 4, bids: [["3400.00", "2.0000"]], asks: [] } });
}

describe("best bid/ask and many markets in one call (docs/api.md#many-markets-in-one-call)", () => {
  it("GET /api/book-ticker/{pair}: best bid and ask with quantities, decimals as strings, the book's sequence; an empty side is null", async () => {
    await seedBooks();
    const { status, body, response } = await callJson("/api/book-ticker/btc-usdt");
    expect(status).toBe(200);
    expect(body).toEqual({
      symbol: "BTCUSDT",
      bidPrice: "97000.10",
      bidQty: "0.50000",
      askPrice: "97001.00",
      askQty: "0.25000",
      sequence: 10,
      timestamp: body.timestamp,
    });
    expect(body.timestamp).toBe(Number(response.headers.get("X-As-Of")));
    const eth = (await callJson("/api/book-ticker/ETHUSDT")).body;
    expect([eth.bidPrice, eth.askPrice, eth.askQty]).toEqual(["3400.00", null, null]);
  });

  it("the book ticker equals the order book's top at the same sequence", async () => {
    await seedBooks();
    const [top, book] = [(await callJson("/api/book-ticker/BTCUSDT")).body, (await callJson("/api/orderbook/BTCUSDT?depth=1")).body];
    expect(top.sequence).toBe(book.sequence);
    expect([top.bidPrice, top.bidQty, top.askPrice, top.askQty]).toEqual([...book.bids[0], ...book.asks[0]]);
  });

  it("list forms answer in the order asked, any accepted spelling; none means every market, in registry order", async () => {
    await seedBooks();
    const tickers = (await callJson("/api/ticker?symbols=ETH-USDT,btcusdt,SOL_USDT")).body;
    expect(tickers.map((t: { symbol: string }) => t.symbol)).toEqual(["ETHUSDT", "BTCUSDT", "SOLUSDT"]);
    const tops = (await callJson("/api/book-ticker?symbols=BTCUSDT,ETHUSDT")).body;
    expect(tops.map((t: { symbol: string }) => t.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    const all = (await callJson("/api/ticker")).body;
    expect(all.map((t: { symbol: string }) => t.symbol)).toEqual(MARKETS.map((m) => m.symbol));
    for (const t of all) for (const field of ["lastPrice", "volume24h", "quoteVolume24h"]) expect(t[field], `${t.symbol}.${field}`).toMatch(DECIMAL);
    expect((await callJson("/api/book-ticker")).body).toHaveLength(MARKETS.length);
  });

  it("unknown symbols are 404 UNKNOWN_SYMBOL naming every one; malformed 400 INVALID_SYMBOL; repeated or empty 400 VALIDATION_FAILED", async () => {
    const unknown = await callJson("/api/ticker?symbols=BTCUSDT,DOGEUSDT,ADA-USDT");
    expect([unknown.status, unknown.body.code, unknown.body.symbols]).toEqual([404, "UNKNOWN_SYMBOL", ["DOGEUSDT", "ADA/USDT"]]);
    expect(unknown.body.detail).toContain("DOGEUSDT, ADA/USDT");
    expect((await callJson("/api/book-ticker?symbols=BTC$USDT")).body.code).toBe("INVALID_SYMBOL");
    const repeated = await callJson("/api/ticker?symbols=BTCUSDT,btc-usdt");
    expect([repeated.status, repeated.body.code, repeated.body.detail]).toEqual([400, "VALIDATION_FAILED", "symbols names BTCUSDT twice"]);
    expect((await callJson("/api/ticker?symbols=BTCUSDT,,ETHUSDT")).status).toBe(400);
    expect((await callJson("/api/ticker?symbols=")).status).toBe(400);
  });

  it("a list call is one request against the rate limit, whatever the number of markets", async () => {
    const ip = "198.18.40.1";
    const first = await call("/api/ticker", { ip });
    const second = await call(`/api/book-ticker?symbols=${MARKETS.map((m) => m.symbol).join(",")}`, { ip });
    expect([first.headers.get("RateLimit-Remaining"), second.headers.get("RateLimit-Remaining")]).toEqual(["9", "8"]);
  });

  it("any list of listed symbols, in any order and spelling, comes back in that order (property)", async () => {
    const spellings = (s: string, base: string, quote: string) => [s, s.toLowerCase(), `${base}-${quote}`, `${base}_${quote}`];
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray([...MARKETS], { minLength: 1 }), fc.nat(), async (markets, seed) => {
        const written = markets.map((m, i) => spellings(m.symbol, m.base, m.quote)[(seed + i) % 4]);
        const { status, body } = await callJson(`/api/ticker?symbols=${written.join(",")}`);
        expect(status, written.join(",")).toBe(200);
        expect(body.map((t: { symbol: string }) => t.symbol)).toEqual(markets.map((m) => m.symbol));
      }),
      { numRuns: 25 },
    );
  });

  it("signed twins: /v1/book-ticker with symbol, symbols or neither", async () => {
    await seedBooks();
    const key = await newKey();
    const one = await signedCall(key, "GET", "/v1/book-ticker?symbol=BTCUSDT");
    expect([one.status, ((await one.json()) as { bidPrice: string }).bidPrice]).toEqual([200, "97000.10"]);
    const many = await signedCall(key, "GET", "/v1/book-ticker?symbols=ETHUSDT,BTCUSDT");
    expect(((await many.json()) as { symbol: string }[]).map((t) => t.symbol)).toEqual(["ETHUSDT", "BTCUSDT"]);
    const both = await signedCall(key, "GET", "/v1/book-ticker?symbol=BTCUSDT&symbols=ETHUSDT");
    expect(both.status).toBe(400);
  });
});

describe("trading rules (docs/publishing.md#trading-rules)", () => {
  const trade = (price: string, quantity: string) => ({ id: `rule-${price}-${quantity}`, price, quantity, side: "buy" as const, time: Date.now() });
  const refusal = async (body: Parameters<typeof ingest>[2]) => {
    try {
      await ingest(env, "*", body);
    } catch (error) {
      return error as { code: string; extras: { errors: { path: string; message: string }[] } };
    }
    throw new Error("the batch was accepted");
  };

  it("ingest refuses a price off the tick, a quantity off the step, under minQty or over maxQty, and a trade under minNotional, naming the field", async () => {
    const cases: [Parameters<typeof ingest>[2], string, string][] = [
      [{ symbol: "BTCUSDT", trades: [trade("97000.101", "0.1")] }, "trades.0.price", "has more than 2 decimals"],
      [{ symbol: "BTCUSDT", trades: [trade("97000.10", "1000.00001")] }, "trades.0.quantity", "is above maxQty 1000"],
      [{ symbol: "BTCUSDT", trades: [trade("0.01", "0.00001")] }, "trades.0.quantity", "price × quantity is below minNotional 0.10 USDT"],
      [{ symbol: "XRPUSDT", book: { type: "snapshot", sequence: 1, bids: [["0.5000", "20000000"]], asks: [] } }, "book.bids.0.1", "is above maxQty 10000000"],
    ];
    for (const [body, path, message] of cases) {
      const error = await refusal(body);
      expect(error.code, path).toBe("VALIDATION_FAILED");
      expect(error.extras.errors, path).toContainEqual({ path, message });
    }
  });

  it("a batch inside the rules is applied; the rules /api/markets publishes are the ones ingest enforces", async () => {
    const { body } = await callJson("/api/markets");
    for (const m of body.markets as { symbol: string; minQty: string; maxQty: string; tickSize: string; minNotional: string }[]) {
      const error = await refusal({ symbol: m.symbol, trades: [trade(m.tickSize, m.minQty)] }).catch(() => undefined);
      // One tick times the least quantity is far under every market's minNotional.
      expect(error?.extras.errors[0], m.symbol).toEqual({ path: "trades.0.quantity", message: expect.stringContaining(`minNotional ${m.minNotional}`) });
    }
    expect(await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade("150.000", "0.01")] })).toMatchObject({ acceptedTrades: 1 });
  });
});
