import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callJson } from "../support/http";
import { defaultMarkets } from "../support/registry";

const MARKETS = await defaultMarkets();

describe("the demo feed publishes through the ingest path into every market", () => {
  it("a tick gives every market a book and trades; the next tick moves the sequence by one", async () => {
    const feed = env.DEMO_FEED_OBJECT.getByName("demo-test");
    const now = Date.now();
    expect(await feed.step(now)).toBe(MARKETS.length);
    const first = await Promise.all(MARKETS.map((m) => callJson(`/api/orderbook/${m.symbol}?depth=1000`)));
    for (const { status, body } of first) {
      expect(status).toBe(200);
      expect(body.bids.length).toBe(50);
      expect(body.asks.length).toBe(50);
      expect(Number(body.bids[0][0])).toBeLessThan(Number(body.asks[0][0]));
    }
    expect(await feed.step(now + 500)).toBe(MARKETS.length);
    for (const [i, market] of MARKETS.entries()) {
      const { body } = await callJson(`/api/orderbook/${market.symbol}`);
      expect(body.sequence, market.symbol).toBe(first[i]!.body.sequence + 1);
    }
    const trades = await Promise.all(MARKETS.map((m) => callJson(`/api/trades/${m.symbol}`)));
    expect(trades.reduce((n, t) => n + t.body.length, 0)).toBeGreaterThan(0);
  });

  it("is off unless DEMO_FEED is on: it does not schedule itself here", async () => {
    const feed = env.DEMO_FEED_OBJECT.getByName("demo-off");
    expect(await feed.ensureRunning()).toBe(false);
    expect(await runDurableObjectAlarm(feed)).toBe(false);
  });
});
