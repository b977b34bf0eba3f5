import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { groupRelay } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import { ADMIN } from "../support/gateways";
import { callJson } from "../support/http";
import { until } from "../support/poll";

describe("feed health (docs/api.md#feed-health)", () => {
  it("the ticker and /api/markets carry lastUpdateTime; /api/status counts trading, halted and stale markets", async () => {
    const before = Date.now();
    await ingest(env, { symbol: "BTCUSDT", trades: [{ id: "health-1", price: "97000.00", quantity: "0.01000", side: "buy", time: before }] });
    const ticker = (await callJson("/api/ticker/BTCUSDT")).body;
    expect(ticker.lastUpdateTime).toBeGreaterThanOrEqual(before);
    expect((await callJson("/api/ticker/ETHBTC")).body.lastUpdateTime).toBeNull();
    const halt = await callJson("/admin/markets/XRPUSDT/status", {
      method: "PUT",
      headers: { ...ADMIN, "Content-Type": "application/json" },
      body: JSON.stringify({ status: "HALTED" }),
    });
    expect(halt.status).toBe(200);
    await groupRelay(env, 0).flush();
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
