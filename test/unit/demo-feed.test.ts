import { describe, expect, it } from "vitest";
import { OrderBook } from "../../src/domain/order-book";
import { createDemoState, DEMO_LEVELS_PER_SIDE, demoTick } from "../../src/market/demo-feed";
import { toIngestBatch } from "../../src/market/ingest-check";
import { IngestBodySchema } from "../../src/market/schemas";
import { findMarket } from "../../src/registry/copy";
import { defaultMarkets } from "../support/registry";

const MARKETS = await defaultMarkets();

const now = Date.UTC(2026, 10, 22, 12);

describe("demo feed: a seedable simulator publishing valid ingest batches", () => {
  it("the same seed gives the same batches; another seed does not", () => {
    const run = (seed: number) => {
      const state = createDemoState(seed, "run");
      return [demoTick(state, MARKETS, now), demoTick(state, MARKETS, now + 500)];
    };
    expect(run(42)).toEqual(run(42));
    expect(run(42)).not.toEqual(run(43));
  });

  it("every batch passes the ingest schema and the market's scales, and books stay uncrossed over many ticks", () => {
    const state = createDemoState(7, "run");
    const books = new Map(MARKETS.map((m) => [m.symbol, new OrderBook(m.priceScale, m.quantityScale)]));
    let trades = 0;
    for (let tick = 0; tick < 200; tick++) {
      for (const body of demoTick(state, MARKETS, now + tick * 500)) {
        const market = findMarket(body.symbol)!;
        const batch = toIngestBatch(market, IngestBodySchema.parse(body), now + tick * 500);
        books.get(body.symbol)!.applyAll(batch.book!, now); // throws on a gap or a crossed book
        trades += batch.trades.length;
      }
    }
    for (const [symbol, book] of books) {
      const { bids, asks } = book.levels(1000);
      expect(bids.length, symbol).toBe(DEMO_LEVELS_PER_SIDE);
      expect(asks.length, symbol).toBe(DEMO_LEVELS_PER_SIDE);
      expect(book.top().bid![0] < book.top().ask![0], symbol).toBe(true);
    }
    // Several trades a second per market: 200 ticks of 0.5 s are 100 s.
    expect(trades / MARKETS.length / 100).toBeGreaterThan(2);
  });

  it("cross pairs stay consistent with their legs (ETHBTC ≈ ETHUSDT / BTCUSDT)", () => {
    const state = createDemoState(3, "run");
    let bodies = demoTick(state, MARKETS, now);
    for (let tick = 1; tick < 100; tick++) bodies = demoTick(state, MARKETS, now + tick * 500);
    const mid = (symbol: string) => {
      const book = bodies.find((b) => b.symbol === symbol)!.book as { sequence: number };
      // Deltas carry changed levels only; the simulator's state holds the whole book.
      const levels = state.markets[symbol]!;
      const scale = findMarket(symbol)!.priceScale;
      const bestBid = Math.max(...Object.keys(levels.bids).map(Number)) / 10 ** scale;
      const bestAsk = Math.min(...Object.keys(levels.asks).map(Number)) / 10 ** scale;
      expect(book.sequence).toBe(levels.sequence);
      return (bestBid + bestAsk) / 2;
    };
    expect(mid("ETHBTC") / (mid("ETHUSDT") / mid("BTCUSDT"))).toBeCloseTo(1, 3);
    expect(mid("SOLBTC") / (mid("SOLUSDT") / mid("BTCUSDT"))).toBeCloseTo(1, 3);
    expect(mid("BTCUSDC") / mid("BTCUSDT")).toBeCloseTo(1, 2);
  });
});
