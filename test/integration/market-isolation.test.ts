import { evictDurableObject, runInDurableObject, SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { IngestAnswer } from "../../src/market/ingest";
import { toIngestBatch } from "../../src/market/ingest-check";
import { encodeIngestBatch, encodeIngestCall } from "../../src/market/ingest-wire";
import { MarketEngine } from "../../src/market/market-engine";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { callJson } from "../support/http";
import { batch, send } from "../support/market-batches";
import { hostOf } from "../support/registry";

type Flushing = { meter: { holder: { flush(env: Env, now: number, force: boolean): Promise<void> | undefined } } };

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** Makes `MarketEngine.prototype[method]` throw for one market (the prototype is shared by every engine, rebuilt ones too). */
function failing(method: "commitStaged", symbol: string): void {
  const prototype = MarketEngine.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const original = prototype[method]!;
  prototype[method] = function (this: { state?: { market: { symbol: string } } }, ...args: unknown[]) {
    if (this.state?.market.symbol === symbol) throw new Error(`injected ${method} fault of ${symbol}`);
    return original.apply(this, args);
  };
  restore.push(() => {
    prototype[method] = original;
  });
}

/** XRPUSDT's host with its book from a snapshot, its sequence, and the configs of two markets of its group. */
async function groupOfXrp() {
  await ensureRegistry(env);
  const host = await hostOf("XRPUSDT");
  expect(["applied", "duplicate"], "XRPUSDT's snapshot").toContain(await send("XRPUSDT", 1));
  const { sequence } = (await callJson<{ sequence: number }>("/api/orderbook/XRPUSDT")).body;
  return { host, sequence, xrp: findMarket("XRPUSDT")!, sol: findMarket("SOLUSDT")! };
}

/** Each market trades in this minute (a snapshot first if it has none): each has its alarm at the minute's end. */
async function tradeInThisMinute(symbols: string[]): Promise<void> {
  for (const symbol of symbols) {
    const next = ((await callJson<{ sequence?: number }>(`/api/orderbook/${symbol}?depth=1`)).body.sequence ?? 0) + 1;
    if (next === 1) expect(await send(symbol, 1), `${symbol}'s snapshot`).toBe("applied");
    expect(await send(symbol, Math.max(2, next)), `${symbol} trades`).toBe("applied");
  }
}

describe("a market's failure is its own (docs/design.md#isolation)", () => {
  it("a market whose every commit throws is held alone: another market of its group, in the same ticks, keeps being acknowledged (fails before: every batch of the tick fails)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("ETHUSDT");
    expect(await send("ETHUSDT", 1), "ETHUSDT's snapshot").toBe("applied");
    expect(await send("BTCUSDT", 1), "BTCUSDT's snapshot").toBe("applied");
    await runInDurableObject(host, (instance: MarketObject) => {
      instance.tickMs = 50;
    });
    failing("commitStaged", "BTCUSDT");
    const answers: Record<string, string[]> = { ETHUSDT: [], BTCUSDT: [] };
    for (let s = 2; s <= 21; s++) {
      // Sent together: both markets' batches are staged for the same tick.
      const [eth, btc] = await Promise.all([send("ETHUSDT", s), send("BTCUSDT", s)]);
      answers.ETHUSDT!.push(eth);
      answers.BTCUSDT!.push(btc);
    }
    expect(answers.ETHUSDT, "ETHUSDT's answers while BTCUSDT fails every commit").toEqual(Array(20).fill("applied"));
    expect(new Set(answers.BTCUSDT), "BTCUSDT's answers: a documented 503, never a 500").toEqual(new Set(["MARKET_UNAVAILABLE"]));
    const held = await runInDurableObject(host, (instance: MarketObject) => instance.heldMarkets());
    expect(
      held.map((m) => [m.symbol, m.reason]),
      "the markets held",
    ).toEqual([["BTCUSDT", "injected commitStaged fault of BTCUSDT"]]);
    // The operator sees it: the host hands its counts on, and /status names the market.
    await runInDurableObject(host, (instance: MarketObject) => (instance as unknown as Flushing).meter.holder.flush(env, Date.now(), true));
    const status = await SELF.fetch("http://localhost/status");
    const page = await status.text();
    expect(/data-figure="market-failures">([^<]*)</.exec(page)?.[1], "/status: markets failing").toMatch(/^BTCUSDT \(\d+\)$/);
    for (const undo of restore.splice(0)) undo();
    // After a restart: ETHUSDT has all 21 batches; BTCUSDT exactly what was acknowledged, and takes the rest when resent.
    await evictDurableObject(host);
    const eth = await callJson<{ sequence: number }>("/api/orderbook/ETHUSDT?depth=1");
    expect(eth.body.sequence, "ETHUSDT's book after a restart").toBe(21);
    const ethTrades = await callJson<unknown[]>("/api/trades/ETHUSDT?limit=100");
    expect(ethTrades.body.length, "ETHUSDT's trades after a restart").toBe(20);
    const btc = await callJson<{ sequence: number }>("/api/orderbook/BTCUSDT?depth=1");
    expect(btc.body.sequence, "BTCUSDT's book: none of the refused batches").toBe(1);
    expect(await send("BTCUSDT", 2), "BTCUSDT's batch 2 resent").toBe("applied");
  });

  it("a market whose alarm throws every time is retried on its own back-off; the others' minutes are still written and the object's alarm never throws (fails before: it threw, and each retry ran the failing market first)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("ETHUSDT");
    await tradeInThisMinute(["XRPUSDT", "ETHUSDT"]);
    const prototype = MarketEngine.prototype as unknown as { alarm(this: { state?: { market: { symbol: string } } }): Promise<void> };
    const original = prototype.alarm;
    prototype.alarm = async function (this: { state?: { market: { symbol: string } } }) {
      if (this.state?.market.symbol === "ETHUSDT" || this.state === undefined) {
        // Rebuilt after its failure, the engine has not loaded yet: it fails as the same market.
        const self = this as unknown as { store: { readMeta(): { config?: { symbol: string } } } };
        if (self.store.readMeta().config?.symbol === "ETHUSDT") throw new Error("injected alarm fault of ETHUSDT");
      }
      return original.call(this);
    };
    restore.push(() => {
      prototype.alarm = original;
    });
    const outcome = await runInDurableObject(host, async (instance: MarketObject, state) => {
      const due = () => (state.storage.kv.get<Record<string, number>>("alarms") ?? {}) as Record<string, number>;
      const before = due();
      let threw = 0;
      // Three rounds of the object's alarm, each at a time past every market's.
      const rounds: Record<string, number>[] = [];
      for (let round = 0; round < 3; round++) {
        const at = Math.max(...Object.values(due())) + 1;
        const realNow = Date.now;
        Date.now = () => at;
        try {
          await instance.alarm();
        } catch {
          threw += 1;
        } finally {
          Date.now = realNow;
        }
        rounds.push(due());
      }
      const xrpMinutes = state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf("XRPUSDT")}minute_buckets`).one().n;
      return { before, rounds, threw, xrpMinutes };
    });
    expect(outcome.threw, "the object's alarm threw").toBe(0);
    expect(outcome.xrpMinutes, "XRPUSDT's minutes written by its alarm").toBeGreaterThan(0);
    const retries = outcome.rounds.map((due) => due.ETHUSDT);
    for (const [i, at] of retries.entries()) expect(at, `ETHUSDT is due again after round ${i}`).toBeDefined();
  });

  it("a market whose alarm hangs holds back no other: every market's minute work runs first, the hung one is given up after the alarm's bound and due again (fails before: the object's alarm waited for it, the markets after it with it)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("ETHUSDT");
    await tradeInThisMinute(["ETHUSDT", "XRPUSDT"]);
    const prototype = MarketEngine.prototype as unknown as { alarm(this: unknown): Promise<void> };
    const original = prototype.alarm;
    prototype.alarm = function (this: unknown) {
      const self = this as { store: { readMeta(): { config?: { symbol: string } } } };
      // ETHUSDT's alarm never ends (an R2 call that never answers).
      if (self.store.readMeta().config?.symbol === "ETHUSDT") return new Promise<void>(() => {});
      return original.call(this);
    };
    restore.push(() => {
      prototype.alarm = original;
    });
    const outcome = await runInDurableObject(host, async (instance: MarketObject, state) => {
      (instance as unknown as { alarmTimeoutMs: number }).alarmTimeoutMs = 50;
      const due = () => (state.storage.kv.get<Record<string, number>>("alarms") ?? {}) as Record<string, number>;
      const at = Math.max(...Object.values(due())) + 1;
      const realNow = Date.now;
      Date.now = () => at;
      try {
        await instance.alarm();
      } finally {
        Date.now = realNow;
      }
      const xrpMinutes = state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf("XRPUSDT")}minute_buckets`).one().n;
      return { ethDue: due().ETHUSDT, at, xrpMinutes };
    });
    expect(outcome.xrpMinutes, "XRPUSDT's minutes written by the same alarm").toBeGreaterThan(0);
    expect(outcome.ethDue, "ETHUSDT is due again, on its back-off").toBeGreaterThan(outcome.at);
  });

  it("a channel's call whose one batch does not read back is refused for that batch alone: the call's other batches are applied (fails before: the whole call threw)", async () => {
    const { host, sequence, xrp, sol } = await groupOfXrp();
    const good = encodeIngestBatch(toIngestBatch(xrp, batch("XRPUSDT", sequence + 1), Date.now()));
    const answers = await runInDurableObject(host, (instance: MarketObject) =>
      instance.ingestAll([
        { market: sol, batch: "[[not a batch", commit: "now" },
        { market: xrp, batch: good, commit: "now" },
      ]),
    );
    const [broken, applied] = answers as [IngestAnswer & { problem?: { code: string } }, IngestAnswer & { book?: string }];
    expect(broken.problem?.code, "the batch that did not read back").toBe("VALIDATION_FAILED");
    expect(applied.book, "the call's other batch").toBe("applied");
  });

  it("a call as the channel sends it (one string): each body is checked at its host against the config held there, one that is not a batch is refused alone, the others applied", async () => {
    const { host, sequence, xrp, sol } = await groupOfXrp();
    // A channel's copy of the registry from before: six decimals where the market holds four.
    const stale = { ...xrp, priceScale: 6, revision: xrp.revision - 1 };
    const tooFine = {
      ...batch("XRPUSDT", sequence + 1),
      trades: [{ id: "iso-fine", price: "1.000001", quantity: "1.0", side: "buy" as const, time: Date.now() }],
    };
    const call = encodeIngestCall([
      { market: sol, body: '{"symbol":"SOLUSDT","trades":5}', commit: "now" },
      { market: stale, body: JSON.stringify(tooFine), commit: "now" },
      { market: xrp, body: JSON.stringify(batch("XRPUSDT", sequence + 1)), commit: "now" },
    ]);
    const answers = await runInDurableObject(host, (instance: MarketObject) => instance.ingestAll(call));
    const [broken, fine, applied] = answers as (IngestAnswer & { problem?: { code: string; extras?: { errors?: { path: string }[] } }; book?: string })[];
    expect(broken?.problem?.code, "the item that is not a batch").toBe("VALIDATION_FAILED");
    expect(fine?.problem?.code, "a price finer than the market's scale, sent with a stale config that allowed it").toBe("VALIDATION_FAILED");
    expect(
      fine?.problem?.extras?.errors?.map((e) => e.path),
      "the field named",
    ).toContain("trades.0.price");
    expect(applied?.book, "the call's other batch").toBe("applied");
    const held = await runInDurableObject(host, (instance: MarketObject) => instance.heldMarkets());
    expect(held, "no market held for a batch that was not one").toEqual([]);
  });
});
