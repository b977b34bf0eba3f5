import { describe, expect, inject, it } from "vitest";
import { until } from "../support/poll";

const baseUrl = inject("baseUrl");

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(baseUrl + path);
  expect(response.status, `${path} answered ${response.status}`).toBe(200);
  return (await response.json()) as T;
}

/** Reads until the demo feed's data satisfies `ok`. */
function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  return until(
    async () => {
      const value = await read();
      return ok(value) ? value : undefined;
    },
    { timeoutMs, intervalMs: 500, what: "the demo feed's data" },
  );
}

type Book = { sequence: number; bids: [string, string][]; asks: [string, string][] };

describe("the service started with npm start serves live demo data", () => {
  it("BTCUSDT trades within 30 s: the ticker has volume", async () => {
    const ticker = await eventually(
      () => getJson<{ volume24h: string; tradeCount24h: number; lastPrice: string }>("/api/ticker/BTCUSDT"),
      (t) => Number(t.volume24h) > 0,
    );
    expect(Number(ticker.volume24h)).toBeGreaterThan(0);
    expect(ticker.tradeCount24h).toBeGreaterThan(0);
    expect(ticker.lastPrice).toMatch(/^\d+\.\d{2}$/);
  });

  it("the order book is sorted, not crossed, and its sequence rises between reads", async () => {
    const first = await eventually(
      () => getJson<Book>("/api/orderbook/BTCUSDT?depth=50"),
      (b) => b.bids.length > 0 && b.asks.length > 0,
    );
    const second = await eventually(
      () => getJson<Book>("/api/orderbook/BTC-USDT?depth=50"),
      (b) => b.sequence > first.sequence,
      10_000,
    );
    expect(second.sequence).toBeGreaterThan(first.sequence);
    for (const book of [first, second]) {
      const bids = book.bids.map(([p]) => Number(p));
      const asks = book.asks.map(([p]) => Number(p));
      expect(bids).toEqual([...bids].sort((a, b) => b - a));
      expect(asks).toEqual([...asks].sort((a, b) => a - b));
      expect(bids[0]!).toBeLessThan(asks[0]!);
    }
  });

  it("prices arrive through the KV cache with asOf", async () => {
    const prices = await eventually(
      () => getJson<{ asOf: number | null; data: { asset: string; price: string }[] }>("/api/prices"),
      (p) => p.asOf !== null && p.data.some((d) => d.asset === "BTC"),
    );
    expect(prices.asOf).toBeGreaterThan(0);
    expect(prices.data.find((d) => d.asset === "BTC")?.price).toMatch(/^\d+\.\d+$/);
  });
});
