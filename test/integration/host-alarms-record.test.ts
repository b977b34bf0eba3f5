import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MetricsHolder } from "../../src/metrics/holder";
import { ObjectMeter } from "../../src/metrics/object-meter";
import { HostAlarms } from "../../src/writes/host-alarms";
import { hostOfGroup } from "../support/registry";

const ROWS = 'mds_storage_rows_written_total{object="probe"}';

describe("a host's alarm writes its markets' next alarms once (src/writes/host-alarms.ts)", () => {
  it("ten markets due together, each setting its next: one write of the record and one alarm (fails before: 12 rows, the record once a market)", async () => {
    // A group no market of the tests is in: its object's own alarms stay out of the count.
    await runInDurableObject(hostOfGroup(9_999), async (_instance, state) => {
      const holder = new MetricsHolder();
      const meter = new ObjectMeter("probe", env, holder);
      const alarms = new HostAlarms(meter.storage(state.storage));
      const symbols = Array.from({ length: 10 }, (_, i) => `P${i}USDT`);
      const now = Date.now();
      for (const symbol of symbols) await alarms.of(symbol).setAlarm(now - 1_000);
      await alarms.settled();
      meter.settleRows();
      holder.counts.take();
      await alarms.running(async () => {
        for (const symbol of alarms.take(now)) await alarms.of(symbol).setAlarm(now + 60_000);
      });
      await alarms.settled();
      meter.settleRows();
      expect(holder.counts.take().counters[ROWS] ?? 0, "rows the alarm's round wrote").toBeLessThanOrEqual(2);
      expect(state.storage.kv.get("alarms"), "the stored record: every market's next").toEqual(Object.fromEntries(symbols.map((s) => [s, now + 60_000])));
      expect(await state.storage.getAlarm(), "the object's alarm: the earliest").toBe(now + 60_000);
    });
  });
});
