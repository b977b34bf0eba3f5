import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { marketObject } from "../../src/core/object-ids";
import { HOUR_MS } from "../../src/history/intervals";
import type { MarketHistory } from "../../src/history/market-history";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { MarketState } from "../../src/market/market-state";
import type { MarketStore } from "../../src/market/market-store";

type Inside = { history: MarketHistory; store: MarketStore; state: MarketState };
const trade = (n: number, time = Date.now()) => ({ id: `dd-${n}`, price: "150.000", quantity: "1.00", side: "buy" as const, time });

describe("a trade id is a duplicate for 25 hours at any rate (docs/publishing.md#resending)", () => {
  it("a trade archived young, because many trades followed it, is still recognised when resent (fails before: applied twice)", async () => {
    // 1,300 trades now; chunks of 100 (the tests' size) archived however young once 100 follow
    // them (a busy market's 1,000,000 scaled down); the newest 1,000 stay hot.
    for (let b = 0; b < 2; b++) {
      const batch = Array.from({ length: b === 0 ? 1000 : 300 }, (_, i) => trade(b * 1000 + i));
      expect((await ingest(env, "*", { symbol: "SOLUSDT", trades: batch })).acceptedTrades).toBe(batch.length);
    }
    const stub = marketObject(env, "SOLUSDT");
    const moved = await runInDurableObject(stub, async (instance: MarketObject) => {
      const inside = instance as unknown as Inside;
      return inside.history.archive(inside.state.market, inside.state.tradeSeq, Date.now() - 25 * HOUR_MS, 20, 100);
    });
    expect(moved, "young chunks archived").toBeGreaterThanOrEqual(3);
    const resent = await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade(0), trade(150), trade(299), trade(5000)] });
    expect(resent, "the three archived ids are duplicates; the new one is taken").toMatchObject({ acceptedTrades: 1, duplicateTrades: 3 });
  });

  it("the ids of an hour are dropped once they are more than 25 hours old, and not before", async () => {
    const stub = marketObject(env, "SOLUSDT");
    const now = Date.now();
    await runInDurableObject(stub, async (instance: MarketObject) => {
      const { store } = instance as unknown as Inside;
      store.prune(0, now + 25 * HOUR_MS - 1);
      expect(store.hasTrade("dd-0"), "just under 25 hours after").toBe(true);
      store.prune(0, now + 27 * HOUR_MS);
      expect(store.hasTrade("dd-0"), "27 hours after").toBe(false);
      expect(store.hasTrade("dd-1299"), "a hot trade stays known").toBe(true);
    });
  });
});
