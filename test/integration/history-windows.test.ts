import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatUnits } from "../../src/core/decimal";
import { DAY_MS, HOUR_MS, MINUTE_MS, nextOpenTime, openTimeOf } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { defaultMarkets } from "../support/registry";

/** A trade as published, in integer units, kept for the reference. */
interface Sent {
  id: string;
  price: bigint;
  quantity: bigint;
  side: "buy" | "sell";
  time: number;
}

/** The reference: statistics of the trades at or after `openTime`, counted one by one. */
function reference(trades: readonly Sent[], openTime: number) {
  const inside = trades.filter((t) => t.time >= openTime);
  // Open and close follow trade time; among equal times the first published opens and the last closes.
  const byTime = [...trades].sort((a, b) => a.time - b.time);
  const last = byTime.at(-1)!;
  const first = [...inside].sort((a, b) => a.time - b.time)[0];
  return {
    lastPrice: last.price,
    openPrice: first?.price ?? last.price,
    highPrice: inside.reduce((m, t) => (t.price > m ? t.price : m), first?.price ?? last.price),
    lowPrice: inside.reduce((m, t) => (t.price < m ? t.price : m), first?.price ?? last.price),
    volume: inside.reduce((n, t) => n + t.quantity, 0n),
    quoteVolume: inside.reduce((n, t) => n + t.price * t.quantity, 0n),
    tradeCount: inside.length,
  };
}

const WINDOWS = [
  ...Array.from({ length: 59 }, (_, i) => `${i + 1}m`),
  ...Array.from({ length: 23 }, (_, i) => `${i + 1}h`),
  ...Array.from({ length: 7 }, (_, i) => `${i + 1}d`),
];
const WINDOW_MS: Record<string, number> = { m: MINUTE_MS, h: HOUR_MS, d: DAY_MS };

describe("rolling windows and trading days (docs/history.md#rolling-windows)", () => {
  it("every window from 1m to 7d equals a reference computed from the trades, natively and in the Binance dialect (property)", async () => {
    const market = (await defaultMarkets()).find((m) => m.symbol === "SOLUSDT")!;
    const sent: Sent[] = [];
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...WINDOWS).chain((windowSize) => {
          const size = Number.parseInt(windowSize, 10) * WINDOW_MS[windowSize.at(-1)!]!;
          // Where windows go wrong: at their open, at hour edges (minutes meet hours there) and anywhere.
          const where = fc.oneof(
            fc.integer({ min: 0, max: 7 * DAY_MS - 10 * MINUTE_MS }).map((age) => ({ age })),
            fc.integer({ min: -2 * MINUTE_MS, max: 2 * MINUTE_MS }).map((d) => ({ age: Math.max(0, Math.min(size + d, 7 * DAY_MS - 10 * MINUTE_MS)) })),
            fc
              .record({ hours: fc.integer({ min: 0, max: 167 }), d: fc.integer({ min: -MINUTE_MS, max: MINUTE_MS }) })
              .map(({ hours, d }) => ({ hourEdge: hours, d })),
          );
          const trade = fc.record({
            where,
            price: fc.bigInt({ min: 1_000n, max: 10n ** 8n }), // 1 to 100,000 USDT at SOLUSDT's 3 decimals
            quantity: fc.bigInt({ min: 10n, max: 10n ** 6n }), // 0.10 to 10,000 SOL: every notional is above 0.10
            side: fc.constantFrom("buy" as const, "sell" as const),
          });
          return fc.tuple(fc.array(trade, { minLength: 1, maxLength: 25 }), fc.constant(windowSize));
        }),
        async ([trades, windowSize]) => {
          const now = Date.now();
          const timeOf = (where: { age: number } | { hourEdge: number; d: number }) =>
            "age" in where
              ? now - where.age
              : Math.min(now, Math.max(now - 7 * DAY_MS + 10 * MINUTE_MS, Math.floor(now / HOUR_MS) * HOUR_MS - where.hourEdge * HOUR_MS + where.d));
          const batch = trades.map((t) => ({ id: `w${(n += 1)}`, price: t.price, quantity: t.quantity, side: t.side, time: timeOf(t.where) }));
          const result = await ingest(env, "*", {
            symbol: "SOLUSDT",
            trades: batch.map((t) => ({
              id: t.id,
              price: formatUnits(t.price, market.priceScale),
              quantity: formatUnits(t.quantity, market.quantityScale),
              side: t.side,
              time: t.time,
            })),
          });
          expect(result, JSON.stringify(result)).toMatchObject({ acceptedTrades: batch.length });
          sent.push(...batch);
          const native = await callJson(`/api/window/SOLUSDT?windowSize=${windowSize}`);
          expect(native.status, JSON.stringify(native.body)).toBe(200);
          const w = native.body;
          const size = Number.parseInt(windowSize, 10) * WINDOW_MS[windowSize.at(-1)!]!;
          expect(w.openTime % MINUTE_MS, "the window opens on a minute").toBe(0);
          expect(w.closeTime - w.openTime, "up to 59,999 ms wider than asked").toBeGreaterThanOrEqual(size);
          expect(w.closeTime - w.openTime).toBeLessThan(size + MINUTE_MS);
          const want = reference(sent, w.openTime);
          const price = (units: bigint) => formatUnits(units, market.priceScale);
          expect(w, `${windowSize} from ${new Date(w.openTime).toISOString()}`).toMatchObject({
            symbol: "SOLUSDT",
            openPrice: price(want.openPrice),
            highPrice: price(want.highPrice),
            lowPrice: price(want.lowPrice),
            lastPrice: price(want.lastPrice),
            volume: formatUnits(want.volume, market.quantityScale),
            quoteVolume: formatUnits(want.quoteVolume, market.priceScale + market.quantityScale),
            tradeCount: want.tradeCount,
          });
          const binance = await callJson(`/binance/api/v3/ticker?symbol=SOLUSDT&windowSize=${windowSize}`);
          expect(binance.status).toBe(200);
          if (binance.body.openTime === w.openTime) {
            // The same minute: the same numbers under Binance's names.
            expect(binance.body).toMatchObject({
              symbol: "SOLUSDT",
              openPrice: w.openPrice,
              highPrice: w.highPrice,
              lowPrice: w.lowPrice,
              lastPrice: w.lastPrice,
              volume: w.volume,
              quoteVolume: w.quoteVolume,
              priceChange: w.priceChange,
              weightedAvgPrice: w.weightedAvgPrice,
              count: w.tradeCount,
              firstId: -1,
              lastId: -1,
            });
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a trading day runs from midnight at its timeZone to the day's last millisecond; MINI drops the change and the average", async () => {
    for (const [timeZone, offset] of [
      ["0", 0],
      ["+08:00", 8 * HOUR_MS],
      ["-5", -5 * HOUR_MS],
      ["05:45", 5.75 * HOUR_MS],
    ] as const) {
      const native = await callJson(`/api/trading-day/SOLUSDT?timeZone=${encodeURIComponent(timeZone)}`);
      expect(native.status, JSON.stringify(native.body)).toBe(200);
      const open = openTimeOf(native.body.openTime, "1d", offset);
      expect(native.body.openTime, `${timeZone}: local midnight`).toBe(open);
      expect(native.body.closeTime, timeZone).toBe(nextOpenTime(open, "1d", offset) - 1);
      const mini = await callJson(
        `/binance/api/v3/ticker/tradingDay?symbols=${encodeURIComponent('["SOLUSDT","BTCUSDT"]')}&timeZone=${encodeURIComponent(timeZone)}&type=MINI`,
      );
      expect(mini.status).toBe(200);
      expect(mini.body.map((t: { symbol: string }) => t.symbol)).toEqual(["SOLUSDT", "BTCUSDT"]);
      expect(Object.keys(mini.body[0]).sort()).toEqual(
        ["symbol", "openPrice", "highPrice", "lowPrice", "lastPrice", "volume", "quoteVolume", "openTime", "closeTime", "firstId", "lastId", "count"].sort(),
      );
    }
    const bad = await callJson("/api/trading-day/SOLUSDT?timeZone=%2B15:00");
    expect([bad.status, bad.body.code]).toEqual([400, "VALIDATION_FAILED"]);
    const badWindow = await callJson("/api/window/SOLUSDT?windowSize=60m");
    expect([badWindow.status, badWindow.body.code]).toEqual([400, "VALIDATION_FAILED"]);
  });
});
