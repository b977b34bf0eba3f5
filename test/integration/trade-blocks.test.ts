import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { tablePrefixOf } from "../../src/writes/market-storage";
import type { MarketStore } from "../../src/writes/market-store";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";
import { rowsCounted } from "../support/rows-counted";

/** The object's meter and the isolate's holder it counts into. */
type Counted = {
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};

describe("a batch's trades are one block (src/writes/trade-blocks.ts)", () => {
  it("a batch of 100 trades writes one row, its commit's, which holds them: where a row and three index entries a trade were 400 (with a row an id 103, with a block of its own 2)", async () => {
    const symbol = "XRPUSDT";
    const market = await hostOf(symbol);
    const now = Date.now();
    const trades = (from: number) =>
      Array.from({ length: 100 }, (_, i) => ({
        id: `blk-${from + i}`,
        price: "0.5000",
        quantity: "10.0",
        side: "sell" as const,
        time: now - 1_000 + from + i,
      }));
    await ingest(env, "*", { symbol, trades: trades(0) }); // the first batch after a start writes the staged buckets
    await runInDurableObject(market, async (instance: MarketObject) => (instance as unknown as Counted).meter.holder.flush(env, Date.now(), true));
    await runInDurableObject(market, async (instance: MarketObject) => (instance as unknown as Counted).meter.holder.counts.take());
    expect((await ingest(env, "*", { symbol, trades: trades(100) })).acceptedTrades).toBe(100);
    const written = await runInDurableObject(market, async (instance: MarketObject) => {
      await Promise.resolve();
      return (instance as unknown as Counted).meter.holder.counts.take().counters['mds_storage_rows_written_total{object="market"}'] ?? 0;
    });
    // Their block and ids wait for the minute's write (src/writes/trade-blocks.ts,
    // trade-id-minutes.ts); the alarm is set only when its time changes (at most a row).
    expect(written, "rows written by one batch of 100 trades").toBeGreaterThanOrEqual(1);
    expect(written, "rows written by one batch of 100 trades").toBeLessThanOrEqual(2);
    // The same answers as before: the latest trades newest first, a page by id, a resend a duplicate.
    const latest = (await callJson<{ id: string }[]>(`/api/trades/${symbol}?limit=3`)).body;
    expect(latest.map((t) => t.id).sort()).toEqual(["blk-197", "blk-198", "blk-199"]);
    const page = (await callJson<{ id: string; tradeId: number }[]>(`/api/trades/${symbol}?fromId=99&limit=3`)).body;
    expect(page.map((t) => [t.tradeId, t.id])).toEqual([
      [99, "blk-98"],
      [100, "blk-99"],
      [101, "blk-100"],
    ]);
    expect(await ingest(env, "*", { symbol, trades: trades(150).slice(0, 60) }), "ids of both blocks resent").toMatchObject({
      acceptedTrades: 10,
      duplicateTrades: 50,
    });
  });

  it("the minute's write seals no block: the open block waits for the log's snapshot, and a restart brings it back from the log (fails before: a block and its index entry a market-minute)", async () => {
    const symbol = "ETHUSDT";
    const market = await hostOf(symbol);
    const blocks = () =>
      runInDurableObject(
        market,
        async (_instance: MarketObject, state) =>
          state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf(symbol)}trade_blocks`).one().n,
      );
    const trades = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({
        id: `seal-${from + i}`,
        price: "3000.00",
        quantity: "0.5000",
        side: "buy" as const,
        time: Date.now() - 1_000,
      }));
    const minute = async () => {
      await runInDurableObject(market, async (instance: MarketObject) => {
        (instance.engine(symbol) as unknown as { minutes: { flushedAt: number } }).minutes.flushedAt = 0; // as if a minute had passed
      });
      expect(await runDurableObjectAlarm(market), "the minute's alarm ran").toBe(true);
    };
    for (let round = 0; round < 3; round++) {
      expect((await ingest(env, "*", { symbol, trades: trades(round * 10, 10) })).acceptedTrades, `round ${round}`).toBe(10);
      await minute();
    }
    expect(await blocks(), "blocks after three minutes' writes").toBe(0);
    // A restart: the trades come back from the log's records, each once.
    await evictDurableObject(market);
    const page = (await callJson<{ id: string; tradeId: number }[]>(`/api/trades/${symbol}?fromId=1&limit=100`)).body;
    expect(
      page.map((t) => t.id),
      "the trades after a restart, in order",
    ).toEqual(trades(0, 30).map((t) => t.id));
    expect(await ingest(env, "*", { symbol, trades: trades(25, 10) }), "a resend across the restart").toMatchObject({ acceptedTrades: 5, duplicateTrades: 5 });
    // The log's snapshot covers the records: their trades are written as one block then.
    await runInDurableObject(market, async (instance: MarketObject) => {
      instance.engine(symbol).coverJournal();
    });
    expect(await blocks(), "blocks after the log's snapshot").toBe(1);
    const after = (await callJson<{ id: string }[]>(`/api/trades/${symbol}?fromId=1&limit=100`)).body;
    expect(after.length, "every trade still read once").toBe(35);
  });

  it("a block is one row written: no index on its times (fails before: a row and an index entry, each deleted again at the archive)", async () => {
    const symbol = "SOLUSDT";
    const market = await hostOf(symbol);
    const now = Date.now();
    const trades = Array.from({ length: 12 }, (_, i) => ({
      id: `one-row-${i}`,
      price: `${150 + i}.000`,
      quantity: "1.00",
      side: "buy" as const,
      time: now - 60_000 + i * 1_000,
    }));
    for (const part of [trades.slice(0, 6), trades.slice(6)]) expect((await ingest(env, "*", { symbol, trades: part })).acceptedTrades, "trades taken").toBe(6);
    const { written, indexes } = await runInDurableObject(market, async (instance: MarketObject, state) => {
      const store = (instance.engine(symbol) as unknown as { store: { blocks: unknown; sealTrades(): void } }).store;
      const counted = rowsCounted([store.blocks], () => state.storage.transactionSync(() => store.sealTrades()));
      return {
        written: counted.written,
        indexes: state.storage.sql
          .exec<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND tbl_name = '${tablePrefixOf(symbol)}trade_blocks'`)
          .one().n,
      };
    });
    expect(written, "rows written by a block of 12 trades").toBe(1);
    expect(indexes, "indexes on the blocks").toBe(0);
    // The latest trades and a page by time read the blocks as before.
    const latest = (await callJson<{ id: string }[]>(`/api/trades/${symbol}?limit=3`)).body;
    expect(
      latest.map((t) => t.id),
      "the latest three, newest first",
    ).toEqual(["one-row-11", "one-row-10", "one-row-9"]);
    const page = (await callJson<{ id: string }[]>(`/api/trades/${symbol}?startTime=${now - 55_500}&endTime=${now - 52_500}`)).body;
    expect(
      page.map((t) => t.id),
      "a page by time",
    ).toEqual(["one-row-5", "one-row-6", "one-row-7"]);
  });

  it("no row passes 2 MB with 64-character ids and large numbers: the open block is written before a commit's trades would take it past its bound (fails before: a block of 2.6 MB)", async () => {
    const symbol = "BTCUSDC";
    const object = await hostOf(symbol);
    const id = (n: number) => `${"x".repeat(56)}${String(n).padStart(8, "0")}`;
    // Prices of 12 digits before the point, quantities up to the market's largest, at its scales.
    const trades = (from: number) =>
      Array.from({ length: 1_000 }, (_, i) => ({
        id: id(from + i),
        price: "123456789012.34",
        quantity: `${1 + (i % 999)}.${String(10_000 + i).slice(-5)}`,
        side: "buy" as const,
        time: Date.now(),
      }));
    // Ten batches one after another leave the open block just under its bound...
    for (let b = 0; b < 10; b++) expect((await ingest(env, "*", { symbol, trades: trades(b * 1_000) })).acceptedTrades, `batch ${b}`).toBe(1_000);
    // ...then twelve sent together commit in one tick.
    await runInDurableObject(object, (instance: MarketObject) => {
      instance.tickMs = 100;
    });
    const together = await Promise.all(Array.from({ length: 12 }, (_, b) => ingest(env, "*", { symbol, trades: trades(10_000 + b * 1_000) })));
    expect(
      together.map((answer) => answer.acceptedTrades).reduce((a, b) => a + b, 0),
      "trades sent together",
    ).toBe(12_000);
    const largest = await runInDurableObject(object, (instance: MarketObject, state) => {
      instance.tickMs = 0;
      const sql = state.storage.sql;
      const block = sql.exec<{ bytes: number }>(`SELECT max(length(CAST(trades AS BLOB))) AS bytes FROM ${tablePrefixOf(symbol)}trade_blocks`).one().bytes;
      const journal = sql.exec<{ bytes: number }>("SELECT max(length(CAST(body AS BLOB))) AS bytes FROM journal").one().bytes;
      return { block, journal };
    });
    expect(largest.block, "the largest trade block's bytes").toBeLessThanOrEqual(1_200_000);
    expect(largest.journal, "the largest journal row's bytes").toBeLessThanOrEqual(2_000_000);
    const count = await callJson<unknown[]>(`/api/trades/${symbol}?limit=1000`);
    expect(count.body.length, "the newest trades read back").toBe(1_000);
  });

  it("a page from any id, forwards or back, through stored blocks and the open one, is the trades a row per trade would give: every id in its bounds once, in order (property; a page that starts or ends inside a stored block takes its trades packed, parsed once for the pages after)", async () => {
    const symbols = ["SOLBTC", "ETHBTC"];
    const now = Date.now();
    // Per market, five stored blocks of 40 trades each, then 30 in the open block: trade ids 1…230,
    // the two markets' blocks alike but for their trades (parsed blocks are kept for every market together).
    for (const symbol of symbols)
      for (let b = 0; b < 6; b++) {
        const trades = Array.from({ length: b < 5 ? 40 : 30 }, (_, i) => ({
          id: `${symbol}-${b}-${i}`,
          price: "0.0020000",
          quantity: "1.00",
          side: "buy" as const,
          time: now - 60_000 + b * 1000 + i,
        }));
        expect((await ingest(env, "*", { symbol, trades })).acceptedTrades, `batch ${b}`).toBe(trades.length);
        if (b < 5)
          await runInDurableObject(await hostOf(symbol), async (instance: MarketObject) =>
            (instance.engine(symbol) as unknown as { store: MarketStore }).store.sealTrades(),
          );
      }
    const all = 230;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...symbols),
        fc.integer({ min: 1, max: all + 5 }),
        fc.integer({ min: 1, max: 120 }),
        fc.boolean(),
        async (symbol, id, limit, forwards) => {
          const query = forwards ? `fromId=${id}` : `before=${id}`;
          const { body } = await callJson<{ tradeId: number; id: string }[]>(`/api/trades/${symbol}?${query}&limit=${limit}`);
          const expected = forwards
            ? Array.from({ length: Math.max(0, Math.min(limit, all - id + 1)) }, (_, i) => id + i)
            : Array.from({ length: Math.min(limit, Math.min(id - 1, all)) }, (_, i) => Math.min(id - 1, all) - Math.min(limit, Math.min(id - 1, all)) + 1 + i);
          expect(
            body.map((t) => t.tradeId),
            `${query}&limit=${limit}`,
          ).toEqual(expected);
          expect(
            body.filter((t) => !t.id.startsWith(`${symbol}-`)).map((t) => t.id),
            `${symbol} ${query}&limit=${limit}: trades of another market`,
          ).toEqual([]);
        },
      ),
      { numRuns: 80 },
    );
  });
});
