import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { MarketStore } from "../../src/writes/market-store";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

describe("trade pages over many archived chunks (docs/history.md#trades)", () => {
  it("a forward page that reads its most chunks ends there, short, and the next page goes on: no gap (fails before: hot trades were appended after a gap)", async () => {
    // Chunks of 100 trades in the tests: 2,300 trades two days old are all archived (23 chunks), then 50 new ones are hot.
    const time = Date.now() - 2 * DAY_MS;
    for (let b = 0; b < 3; b++) {
      const trades = Array.from({ length: b < 2 ? 1000 : 300 }, (_, i) => ({
        id: `pg-${b}-${i}`,
        price: "0.6000",
        quantity: "10.0",
        side: "buy" as const,
        time: time + b * 1000 + i,
      }));
      expect((await ingest(env, "*", { symbol: "XRPUSDT", trades })).acceptedTrades, `batch ${b}`).toBe(trades.length);
    }
    // The market archives beside its ingest too: ask until the old chunks are in R2.
    await until(
      async () =>
        runInDurableObject(await hostOf("XRPUSDT"), async (instance: MarketObject) => {
          await instance.archiveTrades("XRPUSDT", Date.now(), 20);
          return (instance.engine("XRPUSDT") as unknown as { store: MarketStore }).store.archivedThrough() >= 1300;
        }),
      { what: "the old trades archived" },
    );
    // New trades after the archive: hot rows past every chunk.
    const recent = Array.from({ length: 50 }, (_, i) => ({ id: `pg-new-${i}`, price: "0.6000", quantity: "10.0", side: "buy" as const, time: Date.now() }));
    expect((await ingest(env, "*", { symbol: "XRPUSDT", trades: recent })).acceptedTrades).toBe(50);
    const ids: number[] = [];
    for (let fromId = 1, pages = 0; ids.length < 2350 && pages < 10; pages++) {
      const { body } = await callJson(`/api/trades/XRPUSDT?fromId=${fromId}&limit=1000`);
      const page = (body as { tradeId: number }[]).map((t) => t.tradeId);
      expect(page.length, `page from ${fromId}`).toBeGreaterThan(0);
      ids.push(...page);
      fromId = page.at(-1)! + 1;
    }
    expect(ids, "every id once, in order").toEqual(Array.from({ length: 2350 }, (_, i) => i + 1));
  });
});
