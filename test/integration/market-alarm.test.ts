import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { marketObject } from "../../src/core/object-ids";
import type { MarketObject } from "../../src/market/market-object";

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
