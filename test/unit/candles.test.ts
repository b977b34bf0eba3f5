import { describe, expect, it } from "vitest";
import { aggregateCandles } from "../../src/domain/candles";
import { addToBucket, type MinuteBucket, minuteOf } from "../../src/domain/rolling-window";

const scales = { priceScale: 1, quantityScale: 0 };
const day = Date.UTC(2026, 10, 22);

function buckets(trades: [price: bigint, time: number][]): MinuteBucket[] {
  const map = new Map<number, MinuteBucket>();
  // The taker of the trade at 5.0 sold, every other one bought, so candles hold both.
  for (const [price, time] of trades)
    map.set(minuteOf(time), addToBucket(map.get(minuteOf(time)), { price, quantity: 2n, side: price === 50n ? "sell" : "buy", time }));
  return [...map.values()].sort((a, b) => a.minute - b.minute);
}

describe("candles: stored buckets aggregated per interval (src/history/candles.ts)", () => {
  const history = buckets([
    [10n, day + 1_000],
    [30n, day + 61_000],
    [20n, day + 299_000],
    [50n, day + 300_000],
    [40n, day + 3_600_000 + 5],
  ]);

  it("5m candles align to the epoch and carry open, high, low, close, volumes and count", () => {
    expect(aggregateCandles(history, "5m", scales)).toEqual([
      {
        openTime: day,
        closeTime: day + 299_999,
        open: "1.0",
        high: "3.0",
        low: "1.0",
        close: "2.0",
        volume: "6",
        quoteVolume: "12.0",
        tradeCount: 3,
        takerBuyVolume: "6",
        takerBuyQuoteVolume: "12.0",
      },
      {
        openTime: day + 300_000,
        closeTime: day + 599_999,
        open: "5.0",
        high: "5.0",
        low: "5.0",
        close: "5.0",
        volume: "2",
        quoteVolume: "10.0",
        tradeCount: 1,
        takerBuyVolume: "0",
        takerBuyQuoteVolume: "0.0",
      },
      {
        openTime: day + 3_600_000,
        closeTime: day + 3_899_999,
        open: "4.0",
        high: "4.0",
        low: "4.0",
        close: "4.0",
        volume: "2",
        quoteVolume: "8.0",
        tradeCount: 1,
        takerBuyVolume: "2",
        takerBuyQuoteVolume: "8.0",
      },
    ]);
  });

  it("1d candles are UTC days; intervals without trades have no candle", () => {
    const candles = aggregateCandles(history, "1d", scales);
    expect(candles).toHaveLength(1);
    expect(candles[0]).toMatchObject({ openTime: day, closeTime: day + 86_399_999, open: "1.0", close: "4.0", high: "5.0", low: "1.0", tradeCount: 5 });
  });

  it("walking newest first with a limit gives the newest candles, still ascending", () => {
    const newest = aggregateCandles([...history].reverse(), "5m", scales, 2);
    expect(newest.map((c) => c.openTime)).toEqual([day + 300_000, day + 3_600_000]);
    expect(newest[0]).toMatchObject({ open: "5.0", close: "5.0" });
    const oldest = aggregateCandles(history, "1m", scales, 2);
    expect(oldest.map((c) => c.openTime)).toEqual([day, day + 60_000]);
  });

  it("a timeZone shifts the boundaries: +08:00 days open at 16:00 UTC, and the same minutes split differently", () => {
    const late = buckets([
      [10n, day + 15 * 3_600_000],
      [20n, day + 17 * 3_600_000],
    ]);
    expect(
      aggregateCandles(late, "1d", scales).map((c) => [c.openTime, c.tradeCount]),
      "UTC: one day",
    ).toEqual([[day, 2]]);
    expect(
      aggregateCandles(late, "1d", scales, Infinity, 8 * 3_600_000).map((c) => [c.openTime, c.closeTime, c.open]),
      "+08:00: two days",
    ).toEqual([
      [day - 8 * 3_600_000, day + 16 * 3_600_000 - 1, "1.0"],
      [day + 16 * 3_600_000, day + 40 * 3_600_000 - 1, "2.0"],
    ]);
  });

  it("a month candle runs from the first of the month to the last millisecond of its last day", () => {
    const [month] = aggregateCandles(history, "1M", scales);
    expect(month).toMatchObject({ openTime: Date.UTC(2026, 10, 1), closeTime: Date.UTC(2026, 11, 1) - 1, tradeCount: 5 });
  });
});
