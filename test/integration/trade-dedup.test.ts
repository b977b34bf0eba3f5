import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HOUR_MS } from "../../src/domain/intervals";
import type { MarketHistory } from "../../src/history/market-history";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { MarketState } from "../../src/market/market-state";
import { tablePrefixOf } from "../../src/writes/market-storage";
import type { MarketStore } from "../../src/writes/market-store";
import { hostOf } from "../support/registry";

type Inside = { history: MarketHistory; store: MarketStore; state: MarketState };
/** A resend is the same trade again: its id and its time (docs/publishing.md#resending). */
const T0 = Date.now();
const trade = (n: number, time = T0) => ({ id: `dd-${n}`, price: "150.000", quantity: "1.00", side: "buy" as const, time });

describe("a trade id is a duplicate for 25 hours at any rate (docs/publishing.md#resending)", () => {
  it("a trade archived young, because many trades followed it, is still recognised when resent (fails before: applied twice)", async () => {
    // 1,300 trades now; chunks of 100 (the tests' size) archived however young once 100 follow
    // them (a busy market's 1,000,000 scaled down); the newest 1,000 stay hot.
    for (let b = 0; b < 2; b++) {
      const batch = Array.from({ length: b === 0 ? 1000 : 300 }, (_, i) => trade(b * 1000 + i));
      expect((await ingest(env, "*", { symbol: "SOLUSDT", trades: batch })).acceptedTrades).toBe(batch.length);
    }
    const stub = await hostOf("SOLUSDT");
    const moved = await runInDurableObject(stub, async (instance: MarketObject) => {
      const inside = instance.engine("SOLUSDT") as unknown as Inside;
      return inside.history.archive(inside.state.market, inside.state.tradeSeq, Date.now() - 25 * HOUR_MS, 20, 100);
    });
    expect(moved, "young chunks archived").toBeGreaterThanOrEqual(3);
    const resent = await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade(0), trade(150), trade(299), trade(5000)] });
    expect(resent, "the three archived ids are duplicates; the new one is taken").toMatchObject({ acceptedTrades: 1, duplicateTrades: 3 });
  });

  it("the ids of an hour are dropped once they are more than 25 hours old, and not before", async () => {
    const stub = await hostOf("SOLUSDT");
    const now = Date.now();
    await runInDurableObject(stub, async (instance: MarketObject) => {
      const { store } = instance.engine("SOLUSDT") as unknown as Inside;
      // The ids of the minute being traded wait for its end: written as the next minute's flush writes them.
      store.transaction(() => store.writeIds(now, Number.POSITIVE_INFINITY));
      store.prune(0, now + 25 * HOUR_MS - 1);
      expect(store.hasTrade("dd-0", T0), "just under 25 hours after").toBe(true);
      store.prune(0, now + 27 * HOUR_MS);
      expect(store.hasTrade("dd-0", T0), "27 hours after").toBe(false);
      expect(store.hasTrade("dd-1299", T0), "a hot trade stays known").toBe(true);
    });
  });
});

describe("trade ids cost a row a minute of trade time, not a row a trade (src/writes/trade-id-minutes.ts)", () => {
  type Ids = Inside & { minutes: { flushedAt: number } };
  const rowsOf = (instance: MarketObject, minutes: number[]) => {
    const { ctx } = instance as unknown as { ctx: DurableObjectState };
    const tables = ctx.storage.sql
      .exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '${tablePrefixOf("SOLUSDT")}trade_ids_[0-9]*'`)
      .toArray()
      .map((t) => t.name);
    return tables.reduce(
      (sum, table) => sum + ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE minute IN (${minutes.join(",")})`).one().n,
      0,
    );
  };

  it("100 trades over two minutes of trade time are two rows once written; resends are duplicates before the write, after it and after restarts (fails before: no such rows)", async () => {
    const stub = await hostOf("SOLUSDT");
    const start = Math.floor(T0 / 60_000) * 60_000 - 10 * 60_000;
    const minutes = [start / 60_000, start / 60_000 + 1];
    const batches = Array.from({ length: 10 }, (_, b) => Array.from({ length: 10 }, (_, i) => trade(10_000 + b * 10 + i, start + (b * 10 + i) * 1_000)));
    for (const batch of batches) expect((await ingest(env, "*", { symbol: "SOLUSDT", trades: batch })).acceptedTrades, "new trades").toBe(10);
    expect(await runInDurableObject(stub, async (instance: MarketObject) => rowsOf(instance, minutes)), "rows before the minute's write").toBe(0);
    // A restart before the write: the ids are known again from the stored trades.
    await evictDurableObject(stub);
    expect(await ingest(env, "*", { symbol: "SOLUSDT", trades: batches[3]! }), "a resend after a restart before the write").toMatchObject({
      acceptedTrades: 0,
      duplicateTrades: 10,
    });
    await runInDurableObject(stub, async (instance: MarketObject) => {
      (instance.engine("SOLUSDT") as unknown as Ids).minutes.flushedAt = 0; // as if a minute had passed
    });
    expect(await runDurableObjectAlarm(stub), "the minute's alarm ran").toBe(true);
    expect(await runInDurableObject(stub, async (instance: MarketObject) => rowsOf(instance, minutes)), "rows after the write: one a minute").toBe(2);
    await evictDurableObject(stub);
    const resent = await ingest(env, "*", { symbol: "SOLUSDT", trades: [...batches[0]!, ...batches[9]!, trade(20_000, start)] });
    expect(resent, "after the write and a restart: twenty duplicates, one new").toMatchObject({ acceptedTrades: 1, duplicateTrades: 20 });
  });
});
