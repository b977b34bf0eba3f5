import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { call } from "../support/http";
import { hostOf } from "../support/registry";

const admin = { Authorization: "Bearer test-admin-token" };

type Meterable = { meter: { holder: { counts: { take(): { counters: Record<string, number> } } } }; ctx: DurableObjectState };
const take = (instance: object) => (instance as Meterable).meter.holder.counts.take().counters;

describe("storage rows and object requests are counted where they happen (docs/operations.md#metrics)", () => {
  it("counts a statement's rows from the runtime's own cursor, an index entry a row; a KV put, a get and an alarm one row each", async () => {
    await runInDurableObject(await hostOf("SOLBTC"), async (instance: MarketObject) => {
      const { ctx } = instance as unknown as Meterable;
      take(instance);
      ctx.storage.sql.exec(
        "CREATE TABLE IF NOT EXISTS meter_probe (a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX IF NOT EXISTS meter_probe_b ON meter_probe (b)",
      );
      take(instance);
      await Promise.resolve();
      take(instance);
      const insert = ctx.storage.sql.exec("INSERT INTO meter_probe (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')");
      await Promise.resolve(); // the turn ends: its statements are counted
      expect(insert.rowsWritten, "three rows and three index entries, as the runtime counts them").toBe(6);
      const first = take(instance);
      expect(first['mds_storage_rows_written_total{object="market"}'], "counted as the cursor says").toBe(6);
      expect(first['mds_storage_table_rows_written_total{object="market",table="meter_probe"}'], "the same rows, by the table written").toBe(6);
      const rows = ctx.storage.sql.exec("SELECT * FROM meter_probe WHERE b >= 'y'").toArray();
      expect(rows).toHaveLength(2);
      ctx.storage.kv.put("probe", 1);
      ctx.storage.kv.get("probe");
      await ctx.storage.setAlarm(Date.now() + 3_600_000);
      await ctx.storage.deleteAlarm();
      await Promise.resolve();
      const counted = take(instance);
      expect(counted['mds_storage_rows_written_total{object="market"}'], "kv.put, setAlarm, deleteAlarm").toBe(3);
      expect(
        [
          counted['mds_storage_table_rows_written_total{object="market",table="kv"}'],
          counted['mds_storage_table_rows_written_total{object="market",table="alarm"}'],
        ],
        "kv.put; setAlarm and deleteAlarm",
      ).toEqual([1, 2]);
      expect(counted['mds_storage_rows_read_total{object="market"}'], "the select's rows read and kv.get").toBeGreaterThanOrEqual(3);
    });
  });

  it("counts each request an object serves, and /admin/metrics shows it with the rows an ingest wrote", async () => {
    const before = await scrape();
    const result = await ingest(env, "*", {
      symbol: "XRPUSDT",
      trades: [{ id: "meter-1", price: "0.5000", quantity: "100.0", side: "buy", time: Date.now() }],
    });
    expect(result.acceptedTrades).toBe(1);
    // The scrape hands on the isolate's counts, the objects' among them.
    const after = await scrape();
    const grew = (series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);
    expect(grew('mds_object_requests_total{kind="call",object="market"}'), "the ingest call reached the market").toBeGreaterThanOrEqual(1);
    expect(grew('mds_storage_rows_written_total{object="market"}'), "the trade's rows").toBeGreaterThan(0);
  });
});

async function scrape(): Promise<Map<string, number>> {
  const response = await call("/admin/metrics", { headers: admin });
  expect(response.status).toBe(200);
  const series = new Map<string, number>();
  for (const line of (await response.text()).split("\n")) {
    const match = /^(mds_[a-z_]+(?:\{[^}]*\})?) (-?[0-9.e+-]+)$/.exec(line);
    if (match) series.set(match[1]!, Number(match[2]));
  }
  return series;
}
