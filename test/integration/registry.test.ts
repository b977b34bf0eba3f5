import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { objectCalls } from "../../src/core/object-ids";
import { GROUP_SIZE } from "../../src/domain/market-config";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOfGroup, registry } from "../support/registry";
import { withoutMoment } from "../support/window-moment";
import { openSocket } from "./streams-support";

const post = (path: string, body: unknown, headers: Record<string, string> = ADMIN) =>
  callJson(path, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });
const patch = (path: string, body: unknown) =>
  callJson(path, { method: "PATCH", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify(body) });
const rules = { tickSize: "0.0001", stepSize: "0.1", minQty: "1", maxQty: "1000000", minNotional: "1" };

describe("listing assets and markets (docs/operations.md#listing-markets)", () => {
  it("a listed market is readable, takes a publisher's batch, and streams it", async () => {
    expect((await post("/admin/assets", { asset: "ADA", name: "Cardano", decimals: 6 })).status).toBe(201);
    const listed = await post("/admin/markets", { base: "ADA", quote: "USDT", ...rules });
    expect(listed.status).toBe(201);
    expect(listed.body).toEqual({ symbol: "ADAUSDT", base: "ADA", quote: "USDT", status: "TRADING", priceScale: 4, quantityScale: 1, ...rules });
    expect((await callJson("/api/markets")).body.markets.map((m: { symbol: string }) => m.symbol)).toContain("ADAUSDT");
    const socket = await openSocket("/api/ws?streams=book.ADAUSDT,trades.ADAUSDT", "203.0.120.1");
    await until(() => socket.messages.find((m) => m.stream === "book.ADAUSDT"), { what: "the base book" });
    await ingest(env, "*", {
      symbol: "ADAUSDT",
      book: { type: "snapshot", sequence: 1, bids: [["0.4500", "100.0"]], asks: [["0.4510", "50.0"]] },
      trades: [{ id: "ada-1", price: "0.4505", quantity: "10.0", side: "buy", time: Date.now() }],
    });
    expect((await callJson("/api/orderbook/ADA-USDT")).body).toMatchObject({ sequence: 1, bids: [["0.4500", "100.0"]], asks: [["0.4510", "50.0"]] });
    expect((await callJson("/api/ticker/ADAUSDT")).body).toMatchObject({ lastPrice: "0.4505", tradeCount24h: 1 });
    await until(() => socket.messages.find((m) => m.stream === "trades.ADAUSDT" && m.data.some((t: { id: string }) => t.id === "ada-1")), {
      what: "the trade on the stream",
    });
    await until(() => socket.messages.find((m) => m.stream === "book.ADAUSDT" && m.data.sequence === 1), { what: "the book update on the stream" });
    socket.ws.close();
  });

  it("a bulk listing is all or nothing and names every failing item", async () => {
    await post("/admin/assets", [
      { asset: "DOT", name: "Polkadot", decimals: 10 },
      { asset: "LINK", name: "Chainlink", decimals: 18 },
    ]);
    const before = (await registry()).snapshot.version;
    const bad = await post("/admin/markets", [
      { base: "DOT", quote: "USDT", ...rules },
      { base: "NOPE", quote: "USDT", ...rules },
      { base: "LINK", quote: "USDT", ...rules, minQty: "0.05" },
      { base: "LINK", quote: "USDT", ...rules, maxQty: "0.5" },
      { base: "LINK", quote: "LINK", ...rules, tickSize: "-1" },
    ]);
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("VALIDATION_FAILED");
    const paths = bad.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(["body.1.base", "body.2.minQty", "body.3.maxQty", "body.4.quote", "body.4.tickSize"]));
    expect(paths.some((p: string) => p.startsWith("body.0."))).toBe(false);
    expect((await callJson("/api/ticker/DOTUSDT")).status).toBe(404);
    expect((await callJson("/admin/markets", { headers: ADMIN })).body.version).toBe(before);
  });

  it("refuses what does not fit: 409 for a symbol taken, 400 for an inactive or unknown asset, bad decimals, a bad shape; 401 without the token", async () => {
    const taken = await post("/admin/markets", { base: "BTC", quote: "USDT", ...rules });
    expect([taken.status, taken.body.code, taken.body.errors[0].path]).toEqual([409, "ALREADY_EXISTS", "body.symbol"]);
    const twice = await post("/admin/assets", { asset: "BTC", name: "Bitcoin again", decimals: 8 });
    expect([twice.status, twice.body.code]).toEqual([409, "ALREADY_EXISTS"]);
    for (const [body, field] of [
      [{ base: "ZZZ", quote: "USDT", ...rules }, "body.base"],
      [{ base: "ETH", quote: "USDC", ...rules, tickSize: "abc" }, "body.tickSize"],
      [{ base: "ETH", quote: "USDC", ...rules, stepSize: "0" }, "body.stepSize"],
      [{ base: "ETH", quote: "USDC", ...rules, minNotional: "0.000000001" }, "body.minNotional"],
    ] as const) {
      const refused = await post("/admin/markets", body);
      expect([refused.status, refused.body.errors.map((e: { path: string }) => e.path)], JSON.stringify(body)).toEqual([400, [field]]);
    }
    expect((await post("/admin/markets", { base: "eth", quote: "USDC", ...rules })).status).toBe(400);
    expect((await post("/admin/markets", { base: "ETH", quote: "USDC", ...rules, extra: 1 })).status).toBe(400);
    expect((await post("/admin/markets", [])).status).toBe(400);
    expect((await post("/admin/markets", { base: "ETH", quote: "USDC", ...rules }, {})).status).toBe(401);
  });

  it("an inactive asset takes no new market and leaves the prices; active again, it does", async () => {
    await post("/admin/assets", { asset: "NEAR", name: "NEAR", decimals: 24 });
    const put = (asset: string, status: string) =>
      callJson(`/admin/assets/${asset}/status`, { method: "PUT", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify({ status }) });
    expect((await put("NEAR", "INACTIVE")).body).toMatchObject({ asset: "NEAR", status: "INACTIVE" });
    const refused = await post("/admin/markets", { base: "NEAR", quote: "USDT", ...rules });
    expect([refused.status, refused.body.errors]).toEqual([400, [{ path: "body.base", message: "NEAR is not active" }]]);
    expect((await callJson("/admin/assets", { headers: ADMIN })).body.assets.find((a: { asset: string }) => a.asset === "NEAR").status).toBe("INACTIVE");
    expect((await put("NEAR", "ACTIVE")).status).toBe(200);
    expect((await post("/admin/markets", { base: "NEAR", quote: "USDT", ...rules })).status).toBe(201);
    expect((await put("NOPE", "ACTIVE")).status).toBe(404);
    expect((await put("NEAR", "GONE")).status).toBe(400);
  });

  it("500 markets in one request; 501 is refused", async () => {
    const assets = Array.from({ length: 500 }, (_, i) => ({ asset: `T${i}`, name: `Token ${i}`, decimals: 8 }));
    expect((await post("/admin/assets", assets)).status).toBe(201);
    const markets = assets.map((a) => ({ base: a.asset, quote: "USDT", ...rules }));
    const listed = await post("/admin/markets", markets);
    expect(listed.status).toBe(201);
    expect(listed.body).toHaveLength(500);
    expect((await post("/admin/markets", [...markets, markets[0]])).status).toBe(400);
    expect((await callJson("/api/ticker/T499USDT")).status).toBe(200);
  });

  it("changed rules apply to the next batch; the scales stay; a halt refuses ingest at once; delisting is final and leaves the listings", async () => {
    await post("/admin/assets", { asset: "AVAX", name: "Avalanche", decimals: 18 });
    await post("/admin/markets", { base: "AVAX", quote: "USDT", ...rules });
    const trade = (id: string, price: string) =>
      ingest(env, "*", { symbol: "AVAXUSDT", trades: [{ id, price, quantity: "1.0", side: "buy", time: Date.now() }] });
    await expect(trade("a-1", "20.0001")).resolves.toMatchObject({ acceptedTrades: 1 });
    const changed = await patch("/admin/markets/AVAX-USDT", { tickSize: "0.01" });
    expect(changed.body).toMatchObject({ tickSize: "0.01", priceScale: 4 });
    await expect(trade("a-2", "20.0001")).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(trade("a-3", "20.01")).resolves.toMatchObject({ acceptedTrades: 1 });
    expect((await patch("/admin/markets/AVAXUSDT", { tickSize: "0.00001" })).body.errors[0].path).toBe("tickSize");
    expect((await patch("/admin/markets/AVAXUSDT", {})).status).toBe(400);
    expect((await patch("/admin/markets/NOPEUSDT", { tickSize: "0.01" })).status).toBe(404);
    const status = (s: string) =>
      callJson("/admin/markets/AVAXUSDT/status", {
        method: "PUT",
        headers: { ...ADMIN, "Content-Type": "application/json" },
        body: JSON.stringify({ status: s }),
      });
    expect((await status("HALTED")).status).toBe(200);
    await expect(trade("a-4", "20.01")).rejects.toMatchObject({ code: "MARKET_NOT_TRADING" });
    expect((await status("DELISTED")).status).toBe(200);
    expect((await callJson("/api/ticker/AVAXUSDT")).status).toBe(404);
    expect((await callJson("/api/ticker")).body.map((t: { symbol: string }) => t.symbol)).not.toContain("AVAXUSDT");
    expect((await status("TRADING")).status).toBe(409);
    expect((await patch("/admin/markets/AVAXUSDT", { tickSize: "0.1" })).status).toBe(409);
  });

  it("an unknown symbol is a 404 from the isolate's copy: no registry or market call", async () => {
    // The isolate's clock held still: the copy's own refresh, every REGISTRY_REFRESH_MS (1 s here),
    // never falls inside the 20 requests however slow the machine (it did once in CI).
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      await call("/api/ticker/BTCUSDT"); // a refresh due at this moment starts here, before the count
      const before = { ...objectCalls };
      for (let i = 0; i < 20; i++) expect((await call(`/api/ticker/NOPE${i}USDT`)).status).toBe(404);
      expect([objectCalls.registry - before.registry, objectCalls.market - before.market], "registry and market calls").toEqual([0, 0]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("all-market answers and the shared objects' load (docs/api.md#all-markets)", () => {
  it("the all-market ticker and book-ticker equal the per-market answers; the tickers stream brings the same records", async () => {
    const socket = await openSocket("/api/ws?streams=tickers", "203.0.120.2");
    await until(() => socket.messages.find((m) => m.result), { what: "the subscribe ack" });
    const symbols = ["BTCUSDT", "ETHUSDT", "SOLUSDT"];
    for (const [i, symbol] of symbols.entries()) {
      const market = (await registry()).bySymbol.get(symbol)!;
      const price = (100 + i).toFixed(market.priceScale);
      const quantity = (1).toFixed(market.quantityScale);
      await ingest(env, "*", {
        symbol,
        book: { type: "snapshot", sequence: 1, bids: [[price, quantity]], asks: [[(101 + i).toFixed(market.priceScale), quantity]] },
        trades: [{ id: `all-${i}`, price, quantity, side: "buy", time: Date.now() }],
      });
    }
    for (const group of [0]) await runInGroup(group);
    const all = await until(
      async () => {
        const answer = (await callJson("/api/ticker")).body as { symbol: string; tradeCount24h: number }[];
        return symbols.every((s) => answer.find((t) => t.symbol === s)?.tradeCount24h === 1) && answer;
      },
      { what: "the all-market ticker with the three trades" },
    );
    for (const symbol of symbols) {
      const one = (await callJson(`/api/ticker/${symbol}`)).body;
      expect(withoutMoment(all.find((t) => t.symbol === symbol))).toEqual(withoutMoment(one as object));
      const top = (await callJson(`/api/book-ticker/${symbol}`)).body;
      const tops = (await callJson("/api/book-ticker")).body as { symbol: string }[];
      expect({ ...tops.find((t) => t.symbol === symbol), timestamp: 0 }).toEqual({ ...top, timestamp: 0 });
    }
    const streamed = await until(() => {
      const seen = new Map<string, unknown>();
      for (const m of socket.messages.filter((m) => m.stream === "tickers")) for (const t of m.data) seen.set(t.symbol, t);
      return symbols.every((s) => (seen.get(s) as { tradeCount24h?: number } | undefined)?.tradeCount24h === 1) && seen;
    });
    for (const symbol of symbols) expect(withoutMoment(streamed.get(symbol) as object)).toEqual(withoutMoment(all.find((t) => t.symbol === symbol)));
    socket.ws.close();
  });

  it("with 300 markets publishing, calls into the price index and each shard are far fewer than market updates (counted)", async () => {
    const assets = Array.from({ length: 300 }, (_, i) => ({ asset: `L${i}`, name: `Load ${i}`, decimals: 8 }));
    await post("/admin/assets", assets);
    await post(
      "/admin/markets",
      assets.map((a) => ({ base: a.asset, quote: "USDT", ...rules })),
    );
    const socket = await openSocket(
      `/api/ws?streams=${assets
        .slice(0, 40)
        .map((a) => `trades.${a.asset}USDT`)
        .join(",")}`,
      "203.0.120.3",
    );
    await until(() => socket.messages.find((m) => m.result), { what: "the subscribe ack" });
    const before = { ...objectCalls };
    let updates = 0;
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        assets.map((a, i) => {
          updates += 1;
          return ingest(env, "*", {
            symbol: `${a.asset}USDT`,
            trades: [{ id: `${round}-${i}`, price: "1.0000", quantity: "1.0", side: "buy", time: Date.now() }],
          });
        }),
      );
    }
    const groups = Math.ceil((await registry()).snapshot.markets.length / GROUP_SIZE);
    // The relays' batches, sent now instead of at their ticks (the markets' own sends may still be on their way).
    await until(
      async () => {
        for (let g = 0; g < groups; g++) await runInGroup(g);
        return objectCalls.shard > before.shard && objectCalls.priceIndex > before.priceIndex;
      },
      { what: "the relays' calls into the shard and the price index" },
    );
    const calls = { priceIndex: objectCalls.priceIndex - before.priceIndex, shard: objectCalls.shard - before.shard };
    // 900 market updates; the relays' calls are bounded by groups × ticks (each flush is one tick here).
    expect(updates).toBe(900);
    // The counters see these calls (every object runs in this isolate here): the bounds below can fail.
    expect(calls.priceIndex, "price index calls counted").toBeGreaterThan(0);
    expect(calls.shard, "shard calls counted").toBeGreaterThan(0);
    expect(calls.priceIndex / updates, `price index calls ${calls.priceIndex} for ${updates} updates`).toBeLessThan(0.05);
    expect(calls.shard / updates, `shard calls ${calls.shard} for ${updates} updates`).toBeLessThan(0.05);
    socket.ws.close();
    // 300 markets listed and 900 batches: seconds of work, more on a loaded machine (it took over 5 s in a full run).
  }, 60_000);
});

/** Sends a group relay's batches now instead of at its next 100 ms tick. */
async function runInGroup(group: number): Promise<void> {
  await runInDurableObject(hostOfGroup(group), (host: MarketObject) => host.relay.flush());
}
