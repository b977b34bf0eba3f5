import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { marketObject } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";

type WithAlarm = { secondly: { alarmBy(time: number): void } };

describe("a market's one alarm (src/market/market-secondly.ts)", () => {
  it("asked for twice in one turn, the earlier time stands, whichever order (before: the later call overwrote the earlier)", async () => {
    const base = Date.now() + 3_600_000;
    for (const [first, second] of [
      [base + 1_000, base + 60_000],
      [base + 60_000, base + 1_000],
    ] as const) {
      const alarm = await runInDurableObject(marketObject(env, `ALARM${first > second ? "B" : "A"}`), async (instance: MarketObject, state) => {
        const market = instance as unknown as WithAlarm;
        market.secondly.alarmBy(first);
        market.secondly.alarmBy(second);
        // Storage answers in order: once this read is answered, both calls' reads were, and any
        // alarm they set was asked before the read after it.
        await state.storage.getAlarm();
        return state.storage.getAlarm();
      });
      expect(alarm, `alarmBy(${first - base}) then alarmBy(${second - base})`).toBe(Math.min(first, second));
    }
  });
});

type Trading = {
  secondly: { now(state: unknown, now: number, fromAlarm?: boolean): void; schedule(state: unknown, now: number): void; fired(): void };
  state: { lastUpdateAt: number } | undefined;
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};

describe("a trading market's alarm (src/market/market-secondly.ts)", () => {
  it("from the alarm while batches come, the next is a second on, and the batches of that second set none: one setAlarm a second (before: two, the minute's and the batch's)", async () => {
    await ensureRegistry(env);
    const symbol = "BTCUSDC";
    const market = findMarket(symbol)!;
    await ingest(env, "*", { symbol, trades: [{ id: "alarm-1", price: "97000.00", quantity: "0.01000", side: "buy", time: Date.now() }] });
    const counts = await runInDurableObject(marketObject(env, symbol), async (instance: MarketObject, state) => {
      instance.orderBook(market, 1); // loaded
      const inside = instance as unknown as Trading;
      // A moment far ahead, so no alarm of the real clock runs meanwhile: a batch 100 ms before it.
      const at = Date.now() + 3_600_000;
      inside.state!.lastUpdateAt = at - 100;
      await inside.meter.holder.flush(env, Date.now(), true);
      inside.meter.holder.counts.take();
      inside.secondly.fired();
      await state.storage.deleteAlarm();
      inside.secondly.now(inside.state, at, true);
      for (let ms = 100; ms < 1_000; ms += 100) inside.secondly.schedule(inside.state, at + ms); // the second's batches
      await state.storage.getAlarm();
      const alarm = await state.storage.getAlarm();
      const rows = inside.meter.holder.counts.take().counters['mds_storage_rows_written_total{object="market"}'] ?? 0;
      return { alarm: alarm! - at, rows };
    });
    expect(counts, "the next alarm a second on, and the rows written for it").toEqual({ alarm: 1_000, rows: 1 });
  });
});
