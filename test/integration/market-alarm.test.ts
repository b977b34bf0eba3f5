import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import type { HostAlarms } from "../../src/writes/host-alarms";
import { hostOf } from "../support/registry";

type WithAlarm = { secondly: { alarmBy(time: number): void } };
type Host = { alarms: HostAlarms };

describe("a market's one alarm (src/market/market-secondly.ts, src/writes/host-alarms.ts)", () => {
  it("asked for twice in one turn, the earlier time stands, whichever order (before: the later call overwrote the earlier); the object's alarm is its markets' earliest", async () => {
    await ensureRegistry(env);
    const base = Date.now() + 3_600_000;
    const host = await hostOf("ETHBTC");
    for (const [symbol, first, second] of [
      ["ETHBTC", base + 1_000, base + 60_000],
      ["SOLBTC", base + 60_000, base + 2_000],
    ] as const) {
      const alarms = await runInDurableObject(host, async (instance: MarketObject, state) => {
        instance.orderBook(findMarket(symbol)!, 1); // loaded
        const market = instance.engine(symbol) as unknown as WithAlarm;
        market.secondly.alarmBy(first);
        market.secondly.alarmBy(second);
        // The market asks its alarm of the host first (answered at once), then sets it; the host arms
        // its own once the armings asked for before are done.
        const { alarms } = instance as unknown as Host;
        await alarms.of(symbol).getAlarm();
        await alarms.settled();
        return { market: await (instance as unknown as Host).alarms.of(symbol).getAlarm(), object: await state.storage.getAlarm() };
      });
      expect(alarms.market, `${symbol}: alarmBy(${first - base}) then alarmBy(${second - base})`).toBe(Math.min(first, second));
      expect(alarms.object, `${symbol}: the object's alarm`).toBeLessThanOrEqual(base + 1_000);
    }
  });
});

type Trading = {
  secondly: {
    now(state: unknown, now: number): void;
    schedule(state: unknown, now: number): void;
    fired(): void;
    timers: { set(run: () => void, ms: number): unknown; clear(handle: unknown): void };
  };
  state: { lastUpdateAt: number } | undefined;
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};

describe("a trading market's alarm (src/market/market-secondly.ts)", () => {
  it("ten seconds of batches every 100 ms, the alarm run whenever it is due: one setAlarm (the minute's end), the held-back summaries on a timer (before: one setAlarm a second)", async () => {
    await ensureRegistry(env);
    const symbol = "BTCUSDC";
    const market = findMarket(symbol)!;
    await ingest(env, "*", { symbol, trades: [{ id: "alarm-1", price: "97000.00", quantity: "0.01000", side: "buy", time: Date.now() }] });
    const counts = await runInDurableObject(await hostOf(symbol), async (instance: MarketObject, state) => {
      instance.orderBook(market, 1); // loaded
      const inside = instance.engine(symbol) as unknown as Trading;
      const host = instance as unknown as Host & Pick<Trading, "meter">;
      const alarm = host.alarms.of(symbol);
      // The injected clock: a moment far ahead (no alarm of the real clock runs meanwhile), at a
      // minute's start; the injected timers hold the held-back summaries (they would send them).
      const at = Math.ceil((Date.now() + 3_600_000) / 60_000) * 60_000;
      const held: number[] = [];
      inside.secondly.timers = { set: (_run, ms) => held.push(ms), clear: () => undefined };
      inside.secondly.fired();
      // Every market of the group taken off (the test before left two an hour ahead, near `at`).
      host.alarms.take(Number.MAX_SAFE_INTEGER);
      // The alarms the load and the ingest before asked for are set before the count starts.
      await alarm.getAlarm();
      await host.alarms.settled();
      await state.storage.deleteAlarm();
      await host.meter.holder.flush(env, Date.now(), true);
      host.meter.holder.counts.take();
      const alarms: number[] = [];
      for (let ms = 0; ms < 10_000; ms += 100) {
        const now = at + ms;
        const due = await alarm.getAlarm();
        if (due === null || due <= now) {
          // The host runs the market's alarm (and takes it off) when it is due.
          if (due !== null) alarms.push(due - at);
          inside.secondly.fired();
          host.alarms.take(now);
          inside.secondly.now(inside.state, now);
        }
        inside.state!.lastUpdateAt = now; // a batch
        inside.secondly.schedule(inside.state, now);
        // The alarm asked for, if any, is set by now: the market's ask is answered at once, then the host arms.
        await alarm.getAlarm();
        await host.alarms.settled();
      }
      const rows = host.meter.holder.counts.take().counters['mds_storage_rows_written_total{object="market"}'] ?? 0;
      return { alarm: (await alarm.getAlarm())! - at, object: (await state.storage.getAlarm())! - at, alarmsRun: alarms.length, rows, held: held.length };
    });
    expect(
      counts,
      "the alarm at the minute's end, none run in ten seconds, two rows (the market's time in the host's record, the object's alarm); a summary held back each second",
    ).toEqual({
      alarm: 60_000,
      object: 60_000,
      alarmsRun: 0,
      rows: 2,
      held: 10,
    });
  });
});
