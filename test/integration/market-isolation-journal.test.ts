import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry } from "../../src/registry/copy";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { callJson } from "../support/http";
import { send } from "../support/market-batches";
import { hostOf } from "../support/registry";

describe("a market's failure is its own: its journal records (docs/design.md#isolation)", () => {
  it("a market that fails to load is held alone; the group's journal wraps past its records and loses none of them (fails before: its cover throws, and every commit of the group with it)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("SOLUSDT");
    await runInDurableObject(host, (instance: MarketObject, state) => {
      const rows = state.storage.sql.exec<{ n: number | null }>("SELECT max(n) AS n FROM journal").one().n;
      expect(rows, "the group's journal is empty: this test is the first of its file").toBeNull();
      // A ring of 16 rows: the group's commits wrap it within the test.
      (instance.writer.journal as unknown as { slots: number }).slots = 16;
    });
    for (let s = 1; s <= 4; s++) expect(await send("SOLUSDT", s), `SOLUSDT ${s}`).toBe("applied");
    expect(await send("XRPUSDT", 1), "XRPUSDT's snapshot").toBe("applied");
    // SOLUSDT's stored config is broken, and its engine dropped as after a fault: it cannot load again.
    const meta = `${tablePrefixOf("SOLUSDT")}meta`;
    const config = await runInDurableObject(host, (instance: MarketObject, state) => {
      const text = state.storage.sql.exec<{ value: string }>(`SELECT value FROM ${meta} WHERE key = 'config'`).one().value;
      state.storage.sql.exec(`UPDATE ${meta} SET value = '{"broken' WHERE key = 'config'`);
      (instance as unknown as { retire(symbol: string, error: unknown, stage: string): void }).retire("SOLUSDT", new Error("dropped by the test"), "load");
      return text;
    });
    // 40 commits of XRPUSDT: the ring of 16 wraps past SOLUSDT's four records, which it cannot cover.
    for (let s = 2; s <= 41; s++) expect(await send("XRPUSDT", s), `XRPUSDT ${s}, while SOLUSDT fails to load`).toBe("applied");
    expect(await send("SOLUSDT", 5), "SOLUSDT's batch while it is held").toBe("MARKET_UNAVAILABLE");
    const held = await runInDurableObject(host, (instance: MarketObject) => instance.heldMarkets());
    expect(
      held.map((m) => m.symbol),
      "the markets held",
    ).toEqual(["SOLUSDT"]);
    // Mended: its records come back from where they were kept aside.
    await runInDurableObject(host, (instance: MarketObject, state) => {
      state.storage.sql.exec(`UPDATE ${meta} SET value = ? WHERE key = 'config'`, config);
      instance.quarantine.released("SOLUSDT");
    });
    const book = await callJson<{ sequence: number; bids: [string, string][] }>("/api/orderbook/SOLUSDT?depth=1");
    expect([book.body.sequence, book.body.bids[0]?.[1]], "SOLUSDT's book: all four acknowledged batches").toEqual([4, "0.14"]);
    const trades = await callJson<unknown[]>("/api/trades/SOLUSDT?limit=100");
    expect(trades.body.length, "SOLUSDT's trades").toBe(3);
    expect(await send("SOLUSDT", 4), "SOLUSDT's last batch resent").toBe("duplicate");
    expect(await send("SOLUSDT", 5), "SOLUSDT's next batch").toBe("applied");
    expect(await send("XRPUSDT", 42), "XRPUSDT goes on").toBe("applied");
  });
});
