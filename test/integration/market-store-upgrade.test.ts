import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/history/intervals";
import { MarketStore } from "../../src/writes/market-store";

describe("a market's storage from before the taker-buy volumes (src/writes/market-store.ts)", () => {
  it("gains the columns on open: its older minutes count no taker buys, new writes keep them", async () => {
    await runInDurableObject(env.MARKET.getByName("UPGRADEUSDT"), async (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE IF EXISTS minute_buckets");
      // The table as markets created before the change have it.
      sql.exec(`CREATE TABLE minute_buckets (
        minute INTEGER PRIMARY KEY, open TEXT NOT NULL, high TEXT NOT NULL, low TEXT NOT NULL,
        close TEXT NOT NULL, first_trade_time INTEGER NOT NULL, last_trade_time INTEGER NOT NULL,
        volume TEXT NOT NULL, quote_volume TEXT NOT NULL, trade_count INTEGER NOT NULL)`);
      sql.exec("INSERT INTO minute_buckets VALUES (60000, '5', '5', '5', '5', 60000, 60000, '2', '10', 1)");
      const store = new MarketStore(state.storage);
      const [old] = [...store.candles.buckets(MINUTE_MS, 0, 60_000, "ASC")];
      expect(old).toMatchObject({ minute: 60_000, volume: 2n, takerBuyVolume: 0n, takerBuyQuoteVolume: 0n });
      store.candles.upsertBucket({ ...old!, minute: 120_000, takerBuyVolume: 1n, takerBuyQuoteVolume: 5n });
      const [, written] = [...new MarketStore(state.storage).candles.buckets(MINUTE_MS, 0, 120_000, "ASC")];
      expect(written).toMatchObject({ minute: 120_000, takerBuyVolume: 1n, takerBuyQuoteVolume: 5n });
    });
  });

  it("gains hour and day buckets built from its minutes on open, once: coarse candles read them", async () => {
    await runInDurableObject(env.MARKET.getByName("ROLLUPUSDT"), async (_instance, state) => {
      const sql = state.storage.sql;
      const store = new MarketStore(state.storage);
      // A market from before the rollups: minutes over two hours and two days, no rollups, no marker.
      const minute = (start: number, price: bigint, count: number) =>
        store.candles.upsertBucket({
          minute: start,
          open: price,
          high: price,
          low: price,
          close: price,
          firstTradeTime: start,
          lastTradeTime: start + 1,
          volume: 2n,
          quoteVolume: 2n * price,
          takerBuyVolume: 1n,
          takerBuyQuoteVolume: price,
          count,
        });
      minute(DAY_MS - 2 * MINUTE_MS, 7n, 1);
      minute(DAY_MS - MINUTE_MS, 9n, 2);
      minute(DAY_MS + HOUR_MS, 4n, 3);
      sql.exec("DELETE FROM rollup_buckets");
      sql.exec("DELETE FROM meta WHERE key = 'rollups'");
      const reopened = new MarketStore(state.storage);
      expect(
        [...reopened.candles.buckets(HOUR_MS, 0, 2 * DAY_MS, "ASC")].map((b) => [b.minute, b.open, b.close, b.count]),
        "hours",
      ).toEqual([
        [DAY_MS - HOUR_MS, 7n, 9n, 3],
        [DAY_MS + HOUR_MS, 4n, 4n, 3],
      ]);
      expect(
        [...reopened.candles.buckets(DAY_MS, 0, 2 * DAY_MS, "ASC")].map((b) => [b.minute, b.high, b.low, b.volume]),
        "days",
      ).toEqual([
        [0, 9n, 7n, 4n],
        [DAY_MS, 4n, 4n, 2n],
      ]);
      // Built once: a rollup deleted afterwards stays deleted on the next open.
      sql.exec("DELETE FROM rollup_buckets WHERE size = ?", DAY_MS);
      expect([...new MarketStore(state.storage).candles.buckets(DAY_MS, 0, 2 * DAY_MS, "ASC")], "not rebuilt again").toEqual([]);
    });
  });
});
