import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MarketStore } from "../../src/market/market-store";

describe("a market's storage from before the taker-buy volumes (src/market/market-store.ts)", () => {
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
      const [old] = [...store.bucketsBetween(0, 60_000, "ASC")];
      expect(old).toMatchObject({ minute: 60_000, volume: 2n, takerBuyVolume: 0n, takerBuyQuoteVolume: 0n });
      store.upsertBucket({ ...old!, minute: 120_000, takerBuyVolume: 1n, takerBuyQuoteVolume: 5n });
      const [, written] = [...new MarketStore(state.storage).bucketsBetween(0, 120_000, "ASC")];
      expect(written).toMatchObject({ minute: 120_000, takerBuyVolume: 1n, takerBuyQuoteVolume: 5n });
    });
  });
});
