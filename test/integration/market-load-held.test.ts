import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { MarketEngine } from "../../src/market/market-engine";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { send } from "../support/market-batches";
import { hostOf } from "../support/registry";

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

describe("a market whose load fails (docs/design.md#isolation)", () => {
  it("is held: reads in its back-off are answered 503 MARKET_UNAVAILABLE without loading it again, and it loads again once the back-off ends (fails before: every read loaded it again, and threw)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("SOLUSDT");
    expect(await send("SOLUSDT", 1), "SOLUSDT's snapshot").toBe("applied");
    await evictDurableObject(host);
    // Its load throws: the engine's `load` for SOLUSDT.
    const prototype = MarketEngine.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    const original = prototype.load!;
    let loads = 0;
    prototype.load = function (this: { store: { readMeta(): { config?: { symbol: string } } } }, ...args: unknown[]) {
      if (this.store.readMeta().config?.symbol === "SOLUSDT") {
        loads += 1;
        throw new Error("injected load fault of SOLUSDT");
      }
      return original.apply(this, args);
    };
    restore.push(() => {
      prototype.load = original;
    });
    const sol = findMarket("SOLUSDT")!;
    const answers = await runInDurableObject(host, async (instance: MarketObject) => {
      const codes: string[] = [];
      for (let i = 0; i < 10; i++) {
        try {
          const answer = await instance.answer(sol, { kind: "ticker" });
          codes.push(answer.problem?.code ?? "answered");
        } catch (error) {
          codes.push(`threw ${String(error).slice(0, 60)}`);
        }
      }
      return codes;
    });
    expect(answers, "ten reads in the back-off").toEqual(Array(10).fill("MARKET_UNAVAILABLE"));
    expect(loads, "loads tried for them").toBe(1);
    // The back-off over (the held market's `until` passed), the next read loads it again.
    for (const undo of restore.splice(0)) undo();
    const after = await runInDurableObject(host, async (instance: MarketObject) => {
      const held = (instance as unknown as { quarantine: { held: Map<string, { until: number }> } }).quarantine.held.get("SOLUSDT")!;
      held.until = Date.now() - 1;
      return (await instance.answer(sol, { kind: "ticker" })).problem?.code ?? "answered";
    });
    expect(after, "a read after the back-off").toBe("answered");
  });
});
