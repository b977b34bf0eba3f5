import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { hostOf } from "../support/registry";

type Inside = { state: { lastUpdateAt: number; tradeSeq: number; book: { sequence: number; lastFingerprint: string } } | undefined };

/** What the market holds of its record in memory, loaded first. */
async function held(symbol: string) {
  return runInDurableObject(await hostOf(symbol), (instance: MarketObject) => {
    instance.orderBook(findMarket(symbol)!, 1);
    const { state } = instance.engine(symbol) as unknown as Inside;
    return { lastUpdateAt: state!.lastUpdateAt, tradeSeq: state!.tradeSeq, sequence: state!.book.sequence, fingerprint: state!.book.lastFingerprint };
  });
}

describe("the market's record is read back from the log and the blocks (src/writes/market-store.ts)", () => {
  it("after an eviction the book's sequence and fingerprint, the trade ids and the feed's last word are as before, though no batch wrote the record", async () => {
    await ensureRegistry(env);
    const symbol = "SOLUSDT";
    const at = (units: number) => (units / 100).toFixed(2);
    const trade = (id: string) => ({ id, price: at(15_000), quantity: "1.000", side: "buy" as const, time: Date.now() });
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: [[at(14_900), "1.000"]], asks: [[at(15_100), "1.000"]] } });
    await ingest(env, "*", { symbol, trades: [trade("r-1"), trade("r-2")] });
    const lastBook = {
      symbol,
      book: [
        { type: "delta" as const, sequence: 2, bids: [[at(14_950), "2.000"]] as [string, string][], asks: [] },
        { type: "delta" as const, sequence: 3, bids: [], asks: [[at(15_050), "3.000"]] as [string, string][] },
      ],
    };
    await ingest(env, "*", lastBook);
    await ingest(env, "*", { symbol, trades: [trade("r-3")] });
    const before = await held(symbol);
    expect([before.sequence, before.tradeSeq], "before the eviction").toEqual([3, 3]);
    await evictDurableObject(await hostOf(symbol));
    expect(await held(symbol), "read back after the eviction").toEqual(before);
    expect((await ingest(env, "*", lastBook)).book, "the last book batch sent again: recognised").toBe("duplicate");
    const next = await ingest(env, "*", { symbol, trades: [trade("r-4"), trade("r-1")] });
    expect([next.acceptedTrades, next.duplicateTrades], "a new trade and an old id").toEqual([1, 1]);
    expect((await held(symbol)).tradeSeq, "trade ids continue").toBe(4);
  });
});
