import { describe, expect, it } from "vitest";
import { aggregateCandles, KLINE_INTERVALS } from "../../src/market/klines";
import { addToBucket, type MinuteBucket, minuteOf } from "../../src/market/rolling-window";

const scales = { priceScale: 1, quantityScale: 0 };
const day = Date.UTC(2026, 10, 22);

function buckets(trades: [price: bigint, time: number][]): MinuteBucket[] {
  const map = new Map<number, MinuteBucket>();
  // The taker of the trade at 5.0 sold, every other one bought, so candles hold both.
  for (const [price, time] of trades)
    map.set(minuteOf(time), addToBucket(map.get(minuteOf(time)), { price, quantity: 2n, side: price === 50n ? "sell" : "buy", time }));
  return [...map.values()].sort((a, b) => a.minute - b.minute);
}

describe("klines: minute buckets aggregated per interval", () => {
  const history = buckets([
    [10n, day + 1_000],
    [30n, day + 61_000],
    [20n, day + 299_000],
    [50n, day + 300_000],
    [40n, day + 3_600_000 + 5],
  ]);

  it("5m candles align to the epoch and carry open, high, low, close, volumes and count", () => {
    expect(aggregateCandles(history, KLINE_INTERVALS["5m"], scales)).toEqual([
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
    const candles = aggregateCandles(history, KLINE_INTERVALS["1d"], scales);
    expect(candles).toHaveLength(1);
    expect(candles[0]).toMatchObject({ openTime: day, closeTime: day + 86_399_999, open: "1.0", close: "4.0", high: "5.0", low: "1.0", tradeCount: 5 });
  });

  it("walking newest first with a limit gives the newest candles, still ascending", () => {
    const newest = aggregateCandles([...history].reverse(), KLINE_INTERVALS["5m"], scales, 2);
    expect(newest.map((c) => c.openTime)).toEqual([day + 300_000, day + 3_600_000]);
    expect(newest[0]).toMatchObject({ open: "5.0", close: "5.0" });
    const oldest = aggregateCandles(history, KLINE_INTERVALS["1m"], scales, 2);
    expect(oldest.map((c) => c.openTime)).toEqual([day, day + 60_000]);
  });
});
