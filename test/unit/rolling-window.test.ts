import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addToBucket, DAY_MS, formatTicker, type MinuteBucket, minuteOf, tickerStats, type UnitTrade, windowOpenTime } from "../../src/domain/rolling-window";

const scales = { priceScale: 2, quantityScale: 3 };

/** A trade of these tests: the taker's side does not move a ticker. */
type Trade = Omit<UnitTrade, "side">;

/** Builds ascending minute buckets from trades, as the MarketObject does. */
function bucketsOf(trades: Trade[]): MinuteBucket[] {
  const byMinute = new Map<number, MinuteBucket>();
  for (const trade of trades) byMinute.set(minuteOf(trade.time), addToBucket(byMinute.get(minuteOf(trade.time)), { ...trade, side: "buy" }));
  return [...byMinute.values()].sort((a, b) => a.minute - b.minute);
}

function lastByTime(trades: Trade[]): Trade | undefined {
  let last: Trade | undefined;
  for (const t of trades) if (!last || t.time >= last.time) last = t;
  return last;
}

function ticker(trades: Trade[], now: number) {
  return formatTicker("TESTUSDT", tickerStats(bucketsOf(trades), lastByTime(trades), now), scales, now);
}

// 2026-11-22 12:34:56.789 UTC: not on a minute boundary, so the window is wider than 24 h.
const now = Date.UTC(2026, 10, 22, 12, 34, 56, 789);
const openTime = Date.UTC(2026, 10, 21, 12, 34, 0, 0);

describe("ticker window: start of the current minute − 24 h to now (docs/api.md)", () => {
  it("opens at the start of the current minute minus 24 h", () => {
    expect(windowOpenTime(now)).toBe(openTime);
    expect(ticker([], now)).toMatchObject({ openTime, closeTime: now });
  });

  it("counts a trade exactly at openTime and leaves out one a millisecond earlier", () => {
    const trades = [
      { price: 100n, quantity: 1000n, time: openTime - 1 },
      { price: 200n, quantity: 2000n, time: openTime },
      { price: 300n, quantity: 3000n, time: now },
    ];
    expect(ticker(trades, now)).toMatchObject({
      openPrice: "2.00",
      lastPrice: "3.00",
      high24h: "3.00",
      low24h: "2.00",
      volume24h: "5.000",
      quoteVolume24h: "13.00000",
      tradeCount24h: 2,
      change24h: "1.00",
      changePercent24h: "50.00",
    });
  });

  it("a market idle for more than 24 h shows its last price with zero volume and change", () => {
    const trades = [
      { price: 150n, quantity: 1000n, time: openTime - 3 * DAY_MS },
      { price: 125n, quantity: 1000n, time: openTime - 1 },
    ];
    expect(ticker(trades, now)).toMatchObject({
      lastPrice: "1.25",
      openPrice: "1.25",
      high24h: "1.25",
      low24h: "1.25",
      volume24h: "0.000",
      quoteVolume24h: "0.00000",
      change24h: "0.00",
      changePercent24h: "0.00",
      tradeCount24h: 0,
    });
  });

  it("a market that never traded answers zero in every decimal field, at scale", () => {
    expect(ticker([], now)).toMatchObject({
      lastPrice: "0.00",
      openPrice: "0.00",
      high24h: "0.00",
      low24h: "0.00",
      change24h: "0.00",
      changePercent24h: "0.00",
      volume24h: "0.000",
      quoteVolume24h: "0.00000",
      tradeCount24h: 0,
      bestBid: null,
      bestAsk: null,
    });
  });

  it("the high and low leave the window when their minute does", () => {
    const trades = [
      { price: 9_000n, quantity: 1n, time: openTime + 10 }, // the high, in the first minute of the window
      { price: 10n, quantity: 1n, time: openTime + 61_000 }, // the low, one minute later
      { price: 500n, quantity: 1n, time: now - 1000 },
    ];
    expect(ticker(trades, now)).toMatchObject({ high24h: "90.00", low24h: "0.10" });
    // One minute later the high's minute has left the window; two minutes later the low's too.
    expect(ticker(trades, now + 60_000)).toMatchObject({ high24h: "5.00", low24h: "0.10", openPrice: "0.10" });
    expect(ticker(trades, now + 120_000)).toMatchObject({ high24h: "5.00", low24h: "5.00", openPrice: "5.00", tradeCount24h: 1 });
  });

  it("open and last follow trade time, not arrival order", () => {
    const trades = [
      { price: 300n, quantity: 1n, time: now - 10 },
      { price: 100n, quantity: 1n, time: now - 5000 }, // arrives late but is the earliest
      { price: 200n, quantity: 1n, time: now - 20 },
    ];
    expect(ticker(trades, now)).toMatchObject({ openPrice: "1.00", lastPrice: "3.00" });
  });

  it("matches a direct computation over the raw trades for random histories", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            price: fc.bigInt({ min: 1n, max: 10n ** 9n }),
            quantity: fc.bigInt({ min: 1n, max: 10n ** 6n }),
            time: fc.integer({ min: openTime - 2 * DAY_MS, max: now }),
          }),
          { maxLength: 60 },
        ),
        (trades) => {
          const inside = trades.filter((t) => t.time >= openTime);
          const record = ticker(trades, now);
          expect(record.tradeCount24h).toBe(inside.length);
          const volume = inside.reduce((s, t) => s + t.quantity, 0n);
          const quoteVolume = inside.reduce((s, t) => s + t.price * t.quantity, 0n);
          expect(BigInt(record.volume24h.replace(".", ""))).toBe(volume);
          expect(BigInt(record.quoteVolume24h.replace(".", ""))).toBe(quoteVolume);
          if (inside.length > 0) {
            expect(BigInt(record.high24h.replace(".", ""))).toBe(inside.reduce((m, t) => (t.price > m ? t.price : m), 0n));
            expect(BigInt(record.low24h.replace(".", ""))).toBe(inside.reduce((m, t) => (t.price < m ? t.price : m), inside[0]!.price));
          }
        },
      ),
    );
  });

  it("rounds the change percent half away from zero", () => {
    // open 3.00, last 3.01 → 0.333…% → 0.33; open 8.00, last 7.99 → −0.125% → −0.13
    expect(
      ticker(
        [
          { price: 300n, quantity: 1n, time: now - 2 },
          { price: 301n, quantity: 1n, time: now - 1 },
        ],
        now,
      ).changePercent24h,
    ).toBe("0.33");
    expect(
      ticker(
        [
          { price: 800n, quantity: 1n, time: now - 2 },
          { price: 799n, quantity: 1n, time: now - 1 },
        ],
        now,
      ).changePercent24h,
    ).toBe("-0.13");
  });
});
