import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatUnits } from "../../src/core/decimal";
import { aggregateCandles } from "../../src/domain/candles";
import { DAY_MS, formatTimeZone, HOUR_MS, KLINE_INTERVALS, type KlineInterval, MINUTE_MS, nextOpenTime, openTimeOf } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { MarketStore } from "../../src/writes/market-store";
import { callJson } from "../support/http";
import { defaultMarkets, hostOf } from "../support/registry";

interface Sent {
  price: bigint;
  quantity: bigint;
  side: "buy" | "sell";
  time: number;
}

/** The reference candles: the trades grouped by the candle that holds them, counted one by one. */
function referenceCandles(trades: readonly Sent[], interval: KlineInterval, offset: number, scales: { priceScale: number; quantityScale: number }) {
  const groups = new Map<number, Sent[]>();
  for (const t of trades) {
    const open = openTimeOf(t.time, interval, offset);
    groups.set(open, [...(groups.get(open) ?? []), t]);
  }
  const price = (u: bigint) => formatUnits(u, scales.priceScale);
  const qty = (u: bigint) => formatUnits(u, scales.quantityScale);
  const quote = (u: bigint) => formatUnits(u, scales.priceScale + scales.quantityScale);
  return [...groups.entries()]
    .sort(([a], [b]) => a - b)
    .map(([openTime, group]) => {
      // Stable sort: among equal times the first published opens and the last published closes.
      const byTime = [...group].sort((a, b) => a.time - b.time);
      const buys = group.filter((t) => t.side === "buy");
      return {
        openTime,
        closeTime: nextOpenTime(openTime, interval, offset) - 1,
        open: price(byTime[0]!.price),
        high: price(group.reduce((m, t) => (t.price > m ? t.price : m), 0n)),
        low: price(group.reduce((m, t) => (t.price < m ? t.price : m), group[0]!.price)),
        close: price(byTime.at(-1)!.price),
        volume: qty(group.reduce((n, t) => n + t.quantity, 0n)),
        quoteVolume: quote(group.reduce((n, t) => n + t.price * t.quantity, 0n)),
        tradeCount: group.length,
        takerBuyVolume: qty(buys.reduce((n, t) => n + t.quantity, 0n)),
        takerBuyQuoteVolume: quote(buys.reduce((n, t) => n + t.price * t.quantity, 0n)),
      };
    });
}

// Half-hour offsets take the tiled path (minutes at a candle's edges, hours and days between).
const OFFSETS = [0, 8 * HOUR_MS, -5 * HOUR_MS, 5.75 * HOUR_MS, 5.5 * HOUR_MS, -3.5 * HOUR_MS, 14 * HOUR_MS, -12 * HOUR_MS];

describe("candles in every interval and timeZone over the stored history (docs/history.md#intervals)", () => {
  it("REST klines equal candles built from the trades one by one, from minute, hour and day buckets alike (property)", async () => {
    const market = (await defaultMarkets()).find((m) => m.symbol === "ETHUSDT")!;
    const sent: Sent[] = [];
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            age: fc.integer({ min: 0, max: 7 * DAY_MS - 10 * MINUTE_MS }),
            price: fc.bigInt({ min: 10_000n, max: 10n ** 7n }), // 100.00 to 100,000.00 USDT
            quantity: fc.bigInt({ min: 10n, max: 10n ** 5n }), // 0.0010 to 10 ETH: every notional is above 0.10
            side: fc.constantFrom("buy" as const, "sell" as const),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        fc.constantFrom(...KLINE_INTERVALS.filter((i) => i !== "1s")),
        fc.constantFrom(...OFFSETS),
        async (trades, interval, offset) => {
          const now = Date.now();
          const batch = trades.map((t) => ({ id: `c${(n += 1)}`, price: t.price, quantity: t.quantity, side: t.side, time: now - t.age }));
          await ingest(env, "*", {
            symbol: "ETHUSDT",
            trades: batch.map((t) => ({
              id: t.id,
              price: formatUnits(t.price, market.priceScale),
              quantity: formatUnits(t.quantity, market.quantityScale),
              side: t.side,
              time: t.time,
            })),
          });
          sent.push(...batch);
          const timeZone = encodeURIComponent(formatTimeZone(offset));
          const since = now - 8 * DAY_MS;
          const { status, body } = await callJson(`/api/klines/ETHUSDT?interval=${interval}&timeZone=${timeZone}&startTime=${since}&limit=1000`);
          expect(status, JSON.stringify(body)).toBe(200);
          const want = referenceCandles(sent, interval, offset, market).filter((c) => c.closeTime >= since);
          expect(body, `${interval} at ${formatTimeZone(offset)}`).toEqual(want.slice(0, 1000));
          // With an endTime inside a candle: the candles that open at or before it, each whole.
          const end = now - trades[0]!.age + 1;
          const upTo = await callJson(`/api/klines/ETHUSDT?interval=${interval}&timeZone=${timeZone}&endTime=${end}&limit=1000`);
          const wantUpTo = referenceCandles(sent, interval, offset, market).filter((c) => c.openTime <= end);
          expect(upTo.body, `${interval} at ${formatTimeZone(offset)} up to ${end}`).toEqual(wantUpTo.slice(-1000));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("the Binance dialect answers the same candles as rows, in every interval, with timeZone", async () => {
    const since = Date.now() - 8 * DAY_MS;
    for (const interval of KLINE_INTERVALS) {
      for (const timeZone of ["0", "+08:00"]) {
        const native = (await callJson(`/api/klines/ETHUSDT?interval=${interval}&timeZone=${encodeURIComponent(timeZone)}&startTime=${since}`)).body;
        const rows = await callJson(`/binance/api/v3/klines?symbol=ETHUSDT&interval=${interval}&timeZone=${encodeURIComponent(timeZone)}&startTime=${since}`);
        expect(rows.status, `${interval} ${timeZone}: ${JSON.stringify(rows.body)}`).toBe(200);
        expect(
          rows.body.map((r: unknown[]) => [r[0], r[1], r[4], r[6], r[8]]),
          `${interval} ${timeZone}`,
        ).toEqual(
          native.map((c: { openTime: number; open: string; close: string; closeTime: number; tradeCount: number }) => [
            c.openTime,
            c.open,
            c.close,
            c.closeTime,
            c.tradeCount,
          ]),
        );
      }
    }
  });

  it("1s candles come from second buckets: each second's trades, newest last", async () => {
    const base = Math.floor(Date.now() / 1000) * 1000 - 30_000;
    const trades = [
      { id: "s1", price: "0.5000", quantity: "10.0", side: "buy" as const, time: base + 100 },
      { id: "s2", price: "0.5100", quantity: "20.0", side: "sell" as const, time: base + 900 },
      { id: "s3", price: "0.4900", quantity: "30.0", side: "buy" as const, time: base + 5_000 },
    ];
    await ingest(env, "*", { symbol: "XRPUSDT", trades });
    const { body } = await callJson(`/api/klines/XRPUSDT?interval=1s&startTime=${base}`);
    expect(body.map((c: { openTime: number; open: string; close: string; tradeCount: number }) => [c.openTime, c.open, c.close, c.tradeCount])).toEqual([
      [base, "0.5000", "0.5100", 2],
      [base + 5_000, "0.4900", "0.4900", 1],
    ]);
  });

  it("a candle asked with an endTime inside it is whole: 3m, 30m and 1d at +05:30 (fails before: cut at endTime)", async () => {
    const open = openTimeOf(Date.now() - 2 * DAY_MS, "1d", 5.5 * HOUR_MS) + 3 * HOUR_MS; // whole 30 m and 3 m candles open here
    const trades = [10_000, 70_000, 130_000].map((after, i) => ({
      id: `whole-${i}`,
      price: ["100.000", "105.000", "95.000"][i]!,
      quantity: ["1.00", "2.00", "4.00"][i]!,
      side: "buy" as const,
      time: open + after,
    }));
    await ingest(env, "*", { symbol: "SOLUSDT", trades });
    for (const [interval, timeZone] of [
      ["3m", "0"],
      ["30m", "0"],
      ["1d", "5:30"],
    ] as const) {
      const openTime = openTimeOf(open, interval, timeZone === "0" ? 0 : 5.5 * HOUR_MS);
      const { body } = await callJson(`/api/klines/SOLUSDT?interval=${interval}&timeZone=${timeZone}&startTime=${openTime}&endTime=${open + 60_000}&limit=1`);
      expect(body[0], `${interval} at ${timeZone}`).toMatchObject({ openTime, volume: "7.00", close: "95.000", tradeCount: 3 });
    }
  });

  it("1M at +05:30 reads minutes only at its candles' edges, not every minute of the market's life (fails before: every minute)", async () => {
    const offset = 5.5 * HOUR_MS;
    // A trade minute every 30 minutes over 120 days, so every candle edge has minutes beside it.
    const first = Math.floor((Date.now() - 120 * DAY_MS) / DAY_MS) * DAY_MS;
    const rows = Array.from({ length: 120 * 48 }, (_, i) => {
      const t = first + i * 30 * MINUTE_MS;
      const price = (97_000 + (i % 97)).toFixed(2);
      return [t, price, price, price, price, "0.01000", t + MINUTE_MS - 1, (Number(price) * 0.01).toFixed(7), 1, "0.00000", "0.0000000", "0"];
    });
    const imported = await callJson("/admin/markets/BTCUSDC/history/klines", {
      method: "POST",
      headers: { Authorization: "Bearer test-admin-token", "Content-Type": "application/json" },
      body: JSON.stringify({ interval: "1m", rows }),
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    const stub = await hostOf("BTCUSDC");
    const read = () =>
      runInDurableObject(
        stub,
        async (instance: MarketObject) => (instance.engine("BTCUSDC") as unknown as { store: MarketStore }).store.candles.bucketRowsRead,
      );
    const before = await read();
    const { status, body } = await callJson("/api/klines/BTCUSDC?interval=1M&timeZone=5:30&limit=1000");
    expect(status).toBe(200);
    const rowsRead = (await read()) - before;
    const want = await runInDurableObject(stub, async (instance: MarketObject) => {
      const store = (instance.engine("BTCUSDC") as unknown as { store: MarketStore }).store;
      const market = (await defaultMarkets()).find((m) => m.symbol === "BTCUSDC")!;
      return aggregateCandles(store.candles.buckets(MINUTE_MS, 0, Number.MAX_SAFE_INTEGER, "ASC"), "1M", market, 1000, offset);
    });
    expect(body, "the same candles as from every minute").toEqual(want);
    expect(rowsRead, `bucket rows read for ${want.length} candles over 5,760 minutes`).toBeLessThan(1_500);
  });
});
