import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { tablePrefixOf } from "../../src/writes/market-storage";
import type { MarketStore } from "../../src/writes/market-store";
import { MAX_STAGED_BUCKETS } from "../../src/writes/minute-writes";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";

/** The object's meter and the isolate's holder it counts into. */
type Counted = {
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};

const INTERVALS = ["1s", "1m", "1h", "1d"] as const;

async function candles(symbol: string): Promise<Record<string, unknown>> {
  const all: Record<string, unknown> = {};
  for (const interval of INTERVALS) {
    const { status, body } = await callJson(`/api/klines/${symbol}?interval=${interval}&limit=1000`);
    expect(status, `${interval} klines`).toBe(200);
    all[interval] = body;
  }
  return all;
}

describe("candle buckets are staged and written about once a minute (src/writes/bucket-store.ts)", () => {
  it("batches of trades write no bucket row until the flush, and a restart before it loses no trade from any candle, nor counts one twice", async () => {
    const symbol = "SOLUSDT";
    const market = await hostOf(symbol);
    const base = Date.now() - 200_000;
    let n = 0;
    const batch = (at: number) =>
      ingest(env, "*", {
        symbol,
        trades: Array.from({ length: 1 }, (_, i) => ({
          id: `stage-${++n}`,
          price: `${150 + (n % 7)}.00`,
          quantity: `${1 + i}.000`,
          side: i % 2 ? "sell" : "buy",
          time: at + i,
        })),
      });
    await batch(base); // the first batch after a start writes what is staged
    await runInDurableObject(market, async (instance: MarketObject) => (instance as unknown as Counted).meter.holder.flush(env, Date.now(), true));
    await runInDurableObject(market, async (instance: MarketObject) => (instance as unknown as Counted).meter.holder.counts.take());
    // Twenty batches over two and a half minutes of trade time (late trades: the time is the publisher's).
    for (let i = 1; i <= 20; i++) await batch(base + i * 7_000);
    const written = await runInDurableObject(market, async (instance: MarketObject) => {
      await Promise.resolve();
      return (instance as unknown as Counted).meter.holder.counts.take().counters['mds_storage_rows_written_total{object="market"}'] ?? 0;
    });
    // Each batch: its commit's row in the log, which holds its trade, 20 (its own block and index
    // entry before the commit rows: 40; the trade's id a row of its own before the ids by minute:
    // 60; the market's record before it was read back: 80); before staging also four buckets
    // (second, minute, hour, day) a batch, 160 at least. A flush meanwhile (the alarm) writes each
    // bucket once — 20 seconds, 3 minutes, an hour, a day — the ids of each of 3 minutes of trade
    // time, the block of the trades so far and its index entry, and the record.
    expect(written, "rows written by 20 batches of a trade").toBeGreaterThanOrEqual(20);
    expect(written, "rows written by 20 batches of a trade").toBeLessThanOrEqual(20 + 25 + 3 + 3 + 2);
    const before = await candles(symbol);

    // A restart before the flush: the buckets come back from the stored trades.
    await evictDurableObject(market);
    expect(await candles(symbol), "candles after a restart before the flush").toEqual(before);
    // The flush (the minute's alarm) writes them; after another restart nothing is counted twice.
    await runInDurableObject(market, async (instance: MarketObject) => {
      (instance.engine(symbol) as unknown as { minutes: { flushedAt: number } }).minutes.flushedAt = 0; // as if a minute had passed
    });
    expect(await runDurableObjectAlarm(market), "the minute's alarm ran").toBe(true);
    // The 21 trades' seconds are a row a minute of trade time (before: a row a second, 21).
    const secondRows = await runInDurableObject(market, async (_instance: MarketObject, state) => ({
      packed: state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf(symbol)}second_ring`).one().n,
      apart: state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf(symbol)}rollup_buckets WHERE size = 1000`).one().n,
    }));
    const minutes = new Set([0, ...Array.from({ length: 20 }, (_, i) => (i + 1) * 7_000)].map((d) => Math.floor((base + d) / 60_000))).size;
    expect(secondRows, "rows holding the second buckets").toEqual({ packed: minutes, apart: 0 });
    await evictDurableObject(market);
    expect(await candles(symbol), "candles after the flush and another restart").toEqual(before);
    await batch(base + 160_000);
    await evictDurableObject(market);
    const days = (await callJson<{ tradeCount: number }[]>(`/api/klines/${symbol}?interval=1d&limit=2`)).body;
    expect(
      days.reduce((sum, day) => sum + day.tradeCount, 0),
      "the trades the days' candles count",
    ).toBe(22);
  });

  it(`holds at most ${MAX_STAGED_BUCKETS} staged buckets: late trades a bucket each are written sooner than the minute (fails before: 4,106 held)`, async () => {
    const symbol = "XRPUSDT";
    const now = Date.now();
    let n = 0;
    // Three batches of 1,000 trades 180 s apart (a second and a minute of their own each), up to 6.3 days late.
    for (let batch = 0; batch < 3; batch++) {
      const trades = Array.from({ length: 1000 }, () => {
        n += 1;
        return { id: `late-${n}`, price: "0.5000", quantity: "10.0", side: "buy" as const, time: now - 60_000 - n * 180_000 };
      });
      expect((await ingest(env, "*", { symbol, trades })).acceptedTrades, `batch ${batch}`).toBe(1000);
    }
    const staged = await runInDurableObject(
      await hostOf(symbol),
      (instance: MarketObject) => (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles.stagedCount,
    );
    expect(staged, "buckets waiting for the flush").toBeLessThanOrEqual(MAX_STAGED_BUCKETS);
    const days = (await callJson<{ tradeCount: number }[]>(`/api/klines/${symbol}?interval=1d&limit=10`)).body;
    expect(
      days.reduce((sum, day) => sum + day.tradeCount, 0),
      "every trade in the candles",
    ).toBe(3000);
  });

  it("the archive's check each minute writes no bucket while no chunk is due (fails before: it wrote them at its own phase, splitting the minute's write in two)", async () => {
    const symbol = "SOLUSDT";
    const staged = () =>
      runInDurableObject(hostOfSymbol, (instance: MarketObject) => (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles.stagedCount);
    const hostOfSymbol = await hostOf(symbol);
    // The market's first commit writes what it holds; the next trade's buckets wait for the minute's end.
    for (const n of [1, 2])
      await ingest(env, "*", { symbol, trades: [{ id: `archive-check-${n}`, price: "150.000", quantity: "1.00", side: "buy", time: Date.now() }] });
    const before = await staged();
    expect(before, "the trade's buckets staged").toBeGreaterThan(0);
    const moved = await runInDurableObject(hostOfSymbol, (instance: MarketObject) => instance.archiveTrades(symbol));
    expect(moved, "chunks moved").toBe(0);
    expect(await staged(), "buckets still staged after the archive's check").toBe(before);
  });
});
