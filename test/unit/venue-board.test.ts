import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RegistryIndex, type RegistrySnapshot } from "../../src/domain/market-config";
import type { MarketSummary } from "../../src/groups/messages";
import { VenueBoard } from "../../src/groups/venue-board";

const registry = (statuses: ("TRADING" | "HALTED" | "DELISTED")[]) =>
  new RegistryIndex({
    version: 1,
    assets: [],
    markets: statuses.map((status, ordinal) => ({
      symbol: `M${ordinal}USDT`,
      base: `M${ordinal}`,
      quote: "USDT",
      priceScale: 2,
      quantityScale: 2,
      status,
      rules: { tickSize: "0.01", stepSize: "0.01", minQty: "0.01", maxQty: "100", minNotional: "1" },
      ordinal,
      revision: 1,
    })),
  } satisfies RegistrySnapshot);

const summary = (symbol: string, lastUpdateTime: number | null, at = lastUpdateTime ?? 0): MarketSummary => ({
  symbol,
  at,
  ticker: JSON.stringify({ symbol, lastUpdateTime }),
  bookTicker: JSON.stringify({ symbol }),
  lastUpdateTime,
});

describe("feed health (docs/api.md#feed-health)", () => {
  it("a trading market with no update for longer than the threshold, or none ever, is stale; halted ones are apart (injected clock)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("TRADING", "HALTED", "DELISTED" as const), fc.option(fc.integer({ min: 0, max: 100_000 }))), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        (markets, now, threshold) => {
          const index = registry(markets.map(([status]) => status));
          const board = new VenueBoard(markets.flatMap(([, last], i) => (last === null ? [] : [summary(`M${i}USDT`, last)])));
          const status = board.status(index, now, threshold);
          const expectedStale = markets.flatMap(([s, last], i) => (s === "TRADING" && (last === null || now - last > threshold) ? [`M${i}USDT`] : []));
          expect(status.staleMarkets).toEqual(expectedStale);
          expect(status.haltedMarkets).toEqual(markets.flatMap(([s], i) => (s === "HALTED" ? [`M${i}USDT`] : [])));
          expect(status.trading).toBe(markets.filter(([s]) => s === "TRADING").length);
          expect(status.serverTime).toBe(now);
        },
      ),
    );
  });

  it("the all-market answers are built once per change: the same text until a summary arrives", () => {
    const index = registry(["TRADING", "TRADING", "DELISTED"]);
    const board = new VenueBoard([summary("M0USDT", 5)]);
    const first = board.text("ticker", index, 10);
    expect(board.text("ticker", index, 20)).toBe(first);
    expect(JSON.parse(first).map((t: { symbol: string }) => t.symbol)).toEqual(["M0USDT", "M1USDT"]);
    board.apply([summary("M1USDT", 30)]);
    expect(board.text("ticker", index, 40)).not.toBe(first);
    const markets = JSON.parse(board.text("markets", index, 40)).markets as { symbol: string; lastUpdateTime: number | null }[];
    expect(markets.map((m) => [m.symbol, m.lastUpdateTime])).toEqual([
      ["M0USDT", 5],
      ["M1USDT", 30],
      ["M2USDT", null],
    ]);
  });
});
