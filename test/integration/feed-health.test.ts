import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ADMIN } from "../support/gateways";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOfGroup } from "../support/registry";

describe("feed health (docs/api.md#feed-health)", () => {
  it("the ticker and /api/markets carry lastUpdateTime; /api/status counts trading, halted and stale markets", async () => {
    const before = Date.now();
    await ingest(env, "*", { symbol: "BTCUSDT", trades: [{ id: "health-1", price: "97000.00", quantity: "0.01000", side: "buy", time: before }] });
    const ticker = (await callJson("/api/ticker/BTCUSDT")).body;
    expect(ticker.lastUpdateTime).toBeGreaterThanOrEqual(before);
    expect((await callJson("/api/ticker/ETHBTC")).body.lastUpdateTime).toBeNull();
    const halt = await callJson("/admin/markets/XRPUSDT/status", {
      method: "PUT",
      headers: { ...ADMIN, "Content-Type": "application/json" },
      body: JSON.stringify({ status: "HALTED" }),
    });
    expect(halt.status).toBe(200);
    await runInDurableObject(hostOfGroup(0), (host: MarketObject) => host.relay.flush());
    const markets = await until(async () => {
      const body = (await callJson("/api/markets")).body as { markets: { symbol: string; lastUpdateTime: number | null }[] };
      return body.markets.find((m) => m.symbol === "BTCUSDT")?.lastUpdateTime === ticker.lastUpdateTime && body;
    });
    expect(markets.markets.find((m) => m.symbol === "ETHBTC")?.lastUpdateTime).toBeNull();
    const status = await until(async () => {
      const body = (await callJson("/api/status")).body;
      return body.haltedMarkets.includes("XRPUSDT") && body;
    });
    expect(status).toMatchObject({ staleAfterMs: 60_000, halted: 1, trading: 6, serverTime: expect.any(Number) });
    // Never updated in this file: stale. Just updated: not.
    expect(status.staleMarkets).toContain("ETHBTC");
    expect(status.staleMarkets).not.toContain("BTCUSDT");
    expect(status.staleMarkets).not.toContain("XRPUSDT");
    expect(status.stale).toBe(status.staleMarkets.length);
  });
});

describe("the price index after an eviction (docs/design.md#group-relays)", () => {
  it("comes back with every market's stored summary: the all-market answers still show them", async () => {
    // The summaries' write is due (it happens at most every 10 s) and so is the KV write.
    await runInDurableObject(env.PRICE_INDEX.getByName("global"), (instance: object) => {
      Object.assign(instance, { persistedAt: 0, lastWriteAt: 0 });
    });
    await ingest(env, "*", { symbol: "SOLUSDT", trades: [{ id: "evict-1", price: "151.000", quantity: "1.00", side: "buy", time: Date.now() }] });
    await runInDurableObject(hostOfGroup(0), (host: MarketObject) => host.relay.flush());
    await until(
      async () =>
        ((await callJson("/api/ticker")).body as { symbol: string; lastPrice: string }[]).find((t) => t.symbol === "SOLUSDT")?.lastPrice === "151.000",
    );
    await evictDurableObject(env.PRICE_INDEX.getByName("global"));
    const after = ((await callJson("/api/ticker")).body as { symbol: string; lastPrice: string; tradeCount24h: number }[]).find((t) => t.symbol === "SOLUSDT");
    expect(after).toMatchObject({ lastPrice: "151.000", tradeCount24h: 1 });
  });

  it("a summary that comes within a second of the last write brings a later alarm forward to that second", async () => {
    const index = env.PRICE_INDEX.getByName("global");
    const summary = (at: number) => ({
      symbol: "XRPUSDT",
      at,
      ticker: "{}",
      bookTicker: "{}",
      lastUpdateTime: at,
      price: { symbol: "XRPUSDT", status: "TRADING" as const, lastPrice: "0.5000", openPrice: "0.5000", changePercent24h: "0.00", updatedAt: at },
    });
    await runInDurableObject(index, async (instance: object, state) => {
      const now = Date.now();
      // Just written; the summaries' own write set for ten seconds on.
      Object.assign(instance, { lastWriteAt: now });
      await state.storage.setAlarm(now + 10_000);
      await (instance as { reportSummaries(s: unknown[]): Promise<void> }).reportSummaries([summary(now)]);
      expect(await state.storage.getAlarm(), "the streams and KV are due a second after the last write, not ten").toBe(now + 1_000);
    });
  });
});
