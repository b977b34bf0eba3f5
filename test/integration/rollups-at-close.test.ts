import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/domain/intervals";
import { addToBucket, type MinuteBucket } from "../../src/domain/rolling-window";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { BucketStore, heldFromAt } from "../../src/writes/bucket-store";
import { tablePrefixOf } from "../../src/writes/market-storage";
import type { MarketStore } from "../../src/writes/market-store";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";
import { rowsCounted } from "../support/rows-counted";

/** An hour long past, so the test's clock is its own (`flush(now)`), whatever the machine's. */
const H0 = Date.UTC(2026, 0, 1, 10);
const DAY0 = Date.UTC(2026, 0, 1);

const tradeAt = (time: number, n: number) => ({
  price: BigInt(1_000 + (n % 17)),
  quantity: BigInt(1 + (n % 5)),
  side: n % 2 ? ("sell" as const) : ("buy" as const),
  time,
});

describe("hours and days are written once, at their close (src/writes/bucket-store.ts)", () => {
  it("an hour of trading minutes writes no hour or day row until each ends, then one; a restart builds the open ones again from the minutes (fails before: a row for each, every minute)", async () => {
    const symbol = "XRPUSDT";
    await runInDurableObject(await hostOf(symbol), (instance: MarketObject, state) => {
      const candles = (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles;
      const sql = (candles as unknown as { sql: SqlStorage }).sql;
      const prefix = tablePrefixOf(symbol);
      const rollupRows = (size: number) =>
        state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${prefix}rollup_buckets WHERE size = ? AND start >= ?`, size, DAY0).one().n;
      // The rows each flush writes, as the runtime counts them: each statement's cursor, summed after the flush.
      let written = 0;
      const flush = (now: number) => {
        written += rowsCounted([candles, secondsOf(candles)], () => candles.flush(now)).written;
      };
      const fold = (start: number) => trades.reduce<MinuteBucket | undefined>((bucket, t) => addToBucket(bucket, t, start), undefined);
      const trades: ReturnType<typeof tradeAt>[] = [];
      // Sixty minutes of the hour, a trade each, each minute flushed as its alarm does just after it ends.
      for (let m = 0; m < 60; m++) {
        const trade = tradeAt(H0 + m * MINUTE_MS + 1_000, m);
        trades.push(trade);
        candles.stageTrade(trade);
        flush(H0 + (m + 1) * MINUTE_MS + 100);
        if (m === 29) {
          // Half-way: a restart. The open hour and day come back from the stored minutes.
          expect(rollupRows(HOUR_MS), "hour rows while the hour is open").toBe(0);
          const restarted = new BucketStore(sql);
          restarted.restoreOpenRollups(H0 + 30 * MINUTE_MS + 100);
          expect(restarted.bucketAt(HOUR_MS, H0), "the open hour after a restart").toEqual(fold(H0));
          expect(restarted.bucketAt(DAY_MS, DAY0), "the open day after a restart").toEqual(fold(DAY0));
        }
      }
      // The last flush ran after the hour ended: it wrote the hour, once; the day is still open.
      expect(rollupRows(HOUR_MS), "hour rows once the hour ended").toBe(1);
      expect(rollupRows(DAY_MS), "day rows while the day is open").toBe(0);
      // Each minute's flush: its minute and its seconds' row (2); the hour once, at its close (its
      // row and its key's index entry). Before: the hour and the day again at every flush, 242.
      expect(written, "rows written by 60 minute flushes").toBe(60 * 2 + 2);
      const restarted = new BucketStore(sql);
      restarted.restoreOpenRollups(H0 + HOUR_MS + 100);
      expect(restarted.bucketAt(HOUR_MS, H0), "the closed hour as stored").toEqual(fold(H0));
      expect(restarted.bucketAt(DAY_MS, DAY0), "the open day built from the hours").toEqual(fold(DAY0));
      // The day's close: the next flush after midnight writes it.
      candles.flush(DAY0 + DAY_MS + 100);
      expect(rollupRows(DAY_MS), "day rows once the day ended").toBe(1);
      expect(candles.writable(DAY0 + DAY_MS + 200), "nothing left to write").toBe(false);
    });
  });

  it("candles of every size stay exact across flushes and restarts while their hour and day are open", async () => {
    const symbol = "SOLUSDT";
    const market = await hostOf(symbol);
    let n = 0;
    const batch = () =>
      ingest(env, "*", {
        symbol,
        trades: [{ id: `close-${++n}`, price: `${150 + (n % 7)}.00`, quantity: `${1 + (n % 3)}.000`, side: n % 2 ? "sell" : "buy", time: Date.now() - 1_000 }],
      });
    const flushNow = async () => {
      await runInDurableObject(market, async (instance: MarketObject) => {
        (instance.engine(symbol) as unknown as { minutes: { flushedAt: number } }).minutes.flushedAt = 0; // as if a minute had passed
      });
      expect(await runDurableObjectAlarm(market), "the minute's alarm ran").toBe(true);
    };
    const totals = async (interval: string) => {
      const { status, body } = await callJson<{ tradeCount: number; volume: string }[]>(`/api/klines/${symbol}?interval=${interval}&limit=5`);
      expect(status, `${interval} klines`).toBe(200);
      return { trades: body.reduce((s, k) => s + k.tradeCount, 0), volume: body.reduce((s, k) => s + Number(k.volume), 0) };
    };
    let volume = 0;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) {
        await batch();
        volume += 1 + (n % 3);
      }
      await flushNow();
      await evictDurableObject(market);
      for (const interval of ["1m", "1h", "1d"]) expect(await totals(interval), `${interval} after round ${round}`).toEqual({ trades: n, volume });
    }
  });

  it("a span of stored hours is read once until a rollup is written: the kline streams ask for an open candle each second (fails before: read each time)", async () => {
    const symbol = "BTCUSDC";
    await runInDurableObject(await hostOf(symbol), (instance: MarketObject) => {
      const candles = (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles;
      const hour = (k: number) => ({ ...addToBucket(undefined, tradeAt(H0 + k * HOUR_MS, k), H0 + k * HOUR_MS) });
      for (let k = 0; k < 6; k++) candles.upsertBucket(hour(k), HOUR_MS);
      const read = () => {
        const before = candles.bucketRowsRead;
        const buckets = [...candles.buckets(HOUR_MS, H0, H0 + 8 * HOUR_MS - 1, "ASC")];
        return { buckets: buckets.length, rowsRead: candles.bucketRowsRead - before };
      };
      const first = read();
      expect(first.buckets, "hours stored").toBe(6);
      expect(first.rowsRead, "the first read's rows").toBeGreaterThanOrEqual(6);
      for (let second = 0; second < 5; second++) expect(read(), `read again, second ${second}`).toEqual({ buckets: 6, rowsRead: 0 });
      // A rollup written: the next read is the table's again, and sees it.
      candles.upsertBucket(hour(6), HOUR_MS);
      const after = read();
      expect(after.buckets, "hours after a write").toBe(7);
      expect(after.rowsRead, "rows read after a write").toBeGreaterThanOrEqual(7);
    });
  });

  it("the minute being traded when the flush runs waits for the next: a flush just after each turn writes each minute once (fails before: its first moments, then all of it again)", async () => {
    const symbol = "ETHBTC";
    await runInDurableObject(await hostOf(symbol), (instance: MarketObject) => {
      const candles = (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles;
      let written = 0;
      const flush = (now: number) => {
        written += rowsCounted([candles, secondsOf(candles)], () => candles.flush(now, heldFromAt(now, false))).written;
      };
      // Ten minutes; each flush runs 100 ms after the turn, when a trade of the new minute is already in.
      for (let m = 0; m < 10; m++) {
        candles.stageTrade(tradeAt(H0 + m * MINUTE_MS + 59_900, m));
        candles.stageTrade(tradeAt(H0 + (m + 1) * MINUTE_MS + 50, m + 1));
        flush(H0 + (m + 1) * MINUTE_MS + 100);
      }
      // Each flush: the minute that ended and its seconds' row, once (the first a new row each).
      expect(written, "rows written by ten flushes").toBe(10 * 2);
      const minutes = [...candles.buckets(MINUTE_MS, H0, H0 + 11 * MINUTE_MS, "ASC")].map((b) => b.count);
      expect(minutes, "the minutes' trades, the last still staged").toEqual([1, ...Array.from({ length: 9 }, () => 2), 1]);
    });
  });

  it("a restart while a minute is held back stages its trades again: candles exact, resends duplicates, nothing counted twice", async () => {
    const symbol = "SOLBTC";
    const market = await hostOf(symbol);
    const trades = Array.from({ length: 6 }, (_, i) => ({
      id: `held-${i}`,
      price: `0.0015${i}`,
      quantity: "2.00",
      side: "buy" as const,
      time: Date.now() - 1_000 + i,
    }));
    expect((await ingest(env, "*", { symbol, trades: trades.slice(0, 3) })).acceptedTrades, "first trades").toBe(3);
    expect((await ingest(env, "*", { symbol, trades: trades.slice(3) })).acceptedTrades, "later trades").toBe(3);
    const count = async (interval: string) =>
      (await callJson<{ tradeCount: number }[]>(`/api/klines/${symbol}?interval=${interval}&limit=10`)).body.reduce((s, k) => s + k.tradeCount, 0);
    for (let round = 0; round < 2; round++) {
      // The minute's alarm (its flush holds the minute being traded), then a restart.
      await runInDurableObject(market, async (instance: MarketObject) => {
        (instance.engine(symbol) as unknown as { minutes: { flushedAt: number } }).minutes.flushedAt = 0;
      });
      expect(await runDurableObjectAlarm(market), "the minute's alarm ran").toBe(true);
      await evictDurableObject(market);
      for (const interval of ["1s", "1m", "1h", "1d"]) expect(await count(interval), `${interval} trades after restart ${round}`).toBe(6);
      expect(await ingest(env, "*", { symbol, trades }), `a resend after restart ${round}`).toMatchObject({ acceptedTrades: 0, duplicateTrades: 6 });
    }
  });
});

/** The ring a bucket store writes its seconds to (`second-ring.ts`): counted with the store. */
function secondsOf(candles: unknown): unknown {
  return (candles as { seconds: unknown }).seconds;
}
