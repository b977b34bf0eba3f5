import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { IngestBody } from "../../src/market/schemas";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { type GroupJournal, GroupJournal as JournalOf } from "../../src/writes/journal";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";
import { rowsCounted } from "../support/rows-counted";

type Host = {
  tickMs: number;
  writer: { journal: GroupJournal };
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};
const ROWS = 'mds_storage_rows_written_total{object="market"}';
/** The default venue's first group: these markets share one host (ordinals 0–6). */
const GROUP = ["BTCUSDT", "ETHUSDT", "SOLUSDT", "ETHBTC", "SOLBTC", "XRPUSDT", "BTCUSDC"];

/** A batch of one level change and one trade, at the market's scales. */
function batchOf(symbol: string, sequence: number): IngestBody {
  const market = findMarket(symbol)!;
  const price = (units: number) => (units / 10 ** market.priceScale).toFixed(market.priceScale);
  const quantity = (10 ** -market.quantityScale * 1_000).toFixed(market.quantityScale);
  return {
    symbol,
    book: { type: "delta", sequence, bids: [[price(1_000 - (sequence % 50)), quantity]], asks: [] },
    trades: [{ id: `gj-${symbol}-${sequence}`, price: price(1_001), quantity, side: "buy", time: Date.now() }],
  };
}

async function onHost<T>(work: (host: Host) => T | Promise<T>): Promise<T> {
  return runInDurableObject(await hostOf("BTCUSDT"), (instance: MarketObject) => work(instance as unknown as Host));
}

/** The market's book sequence now (a later test builds on an earlier one's book). */
async function sequenceOf(symbol: string): Promise<number> {
  return (await callJson<{ sequence: number }>(`/api/orderbook/${symbol}?depth=1`)).body.sequence;
}

describe("a group's markets commit together: one journal row a tick (src/writes/journal.ts)", () => {
  it("seven markets' batches sent together are written as a few rows, not a row a market (fails before: each market its own commit row)", async () => {
    await ensureRegistry(env);
    expect(new Set(GROUP.map((symbol) => findMarket(symbol)!.ordinal >> 6)).size, "the markets share a group").toBe(1);
    for (const symbol of GROUP) {
      const market = findMarket(symbol)!;
      const at = (units: number) => (units / 10 ** market.priceScale).toFixed(market.priceScale);
      await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: [[at(900), "1"]], asks: [[at(1_100), "1"]] } });
    }
    await onHost(async (host) => {
      host.tickMs = 100;
      await host.meter.holder.flush(env, Date.now(), true);
      host.meter.holder.counts.take();
    });
    const before = await onHost(
      (host) => (host as unknown as { ctx: DurableObjectState }).ctx.storage.sql.exec<{ n: number }>("SELECT max(n) AS n FROM journal").one().n,
    );
    // Five batches a market, all seven markets, sent together: 35 batches.
    const answers = await Promise.all(GROUP.flatMap((symbol) => Array.from({ length: 5 }, (_, i) => ingest(env, "*", batchOf(symbol, 2 + i)))));
    for (const [i, answer] of answers.entries()) expect(answer, `batch ${i}`).toMatchObject({ acceptedTrades: 1, book: "applied" });
    const after = await onHost(
      (host) => (host as unknown as { ctx: DurableObjectState }).ctx.storage.sql.exec<{ n: number }>("SELECT max(n) AS n FROM journal").one().n,
    );
    expect(after - before, "journal rows for 35 batches of seven markets").toBeLessThanOrEqual(4);
    const rows = await onHost((host) => host.meter.holder.counts.take().counters[ROWS] ?? 0);
    // Each journal row, each market's open block staying in memory; the alarms' record and the
    // object's alarm; the minute's buckets of markets due to write them (at most one each).
    expect(rows, "rows written for 35 batches of seven markets").toBeLessThan(35);
    // Every table the markets made carries its market's prefix: only the group's journal is shared.
    const shared = await onHost((host) =>
      (host as unknown as { ctx: DurableObjectState }).ctx.storage.sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE name NOT LIKE 'm\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )
        .toArray()
        .map((row) => row.name),
    );
    expect(shared, "tables and indexes without a market's prefix").toEqual(["journal"]);
    await evictDurableObject(await hostOf("BTCUSDT"));
    for (const symbol of GROUP) {
      const trades = await callJson<{ id: string }[]>(`/api/trades/${symbol}?limit=10`);
      expect(trades.body.map((t) => t.id).sort(), `${symbol}'s trades after a restart`).toEqual(
        Array.from({ length: 5 }, (_, i) => `gj-${symbol}-${2 + i}`).sort(),
      );
      const book = await callJson<{ sequence: number }>(`/api/orderbook/${symbol}?depth=5`);
      expect(book.body.sequence, `${symbol}'s book after a restart`).toBe(6);
    }
  });

  it("a quiet market's record is never written over: the market writes a snapshot first, and its book and trades read back after a restart (fails before: its log lost to the ring)", async () => {
    await ensureRegistry(env);
    const quiet = "ETHBTC";
    const busy = "SOLBTC";
    const market = findMarket(quiet)!;
    const at = (units: number) => (units / 10 ** market.priceScale).toFixed(market.priceScale);
    await onHost((host) => {
      host.tickMs = 0;
      host.writer.journal.slots = 8;
    });
    const q = await sequenceOf(quiet);
    const b = await sequenceOf(busy);
    await ingest(env, "*", { symbol: quiet, book: { type: "snapshot", sequence: q + 1, bids: [[at(900), "1"]], asks: [[at(1_100), "1"]] } });
    await ingest(env, "*", batchOf(quiet, q + 2));
    const want = (await callJson<{ sequence: number; bids: unknown[] }>(`/api/orderbook/${quiet}?depth=5`)).body;
    expect(want.sequence, "the quiet market's book").toBe(q + 2);
    const snapshots = () =>
      onHost((host) => {
        const { sql } = (host as unknown as { ctx: DurableObjectState }).ctx.storage;
        return sql.exec<{ levels: string }>(`SELECT levels FROM ${tablePrefixOf(quiet)}book_snapshot`).toArray().length;
      });
    const snapshotsBefore = await snapshots();
    // Twenty ticks of another market: the ring of eight rows comes round twice over the quiet market's records.
    for (let i = 1; i <= 20; i++) expect((await ingest(env, "*", batchOf(busy, b + i))).book, `busy batch ${i}`).toBe("applied");
    expect(await snapshots(), "the quiet market's snapshot row").toBe(1);
    expect(snapshotsBefore, "no snapshot before the ring came round").toBe(0);
    await evictDurableObject(await hostOf("BTCUSDT"));
    await onHost((host) => {
      host.tickMs = 0;
      host.writer.journal.slots = 8;
    });
    const book = (await callJson<{ sequence: number; bids: unknown[] }>(`/api/orderbook/${quiet}?depth=5`)).body;
    expect([book.sequence, book.bids], "the quiet market's book after the restart").toEqual([want.sequence, want.bids]);
    const trades = await callJson<{ id: string }[]>(`/api/trades/${quiet}?limit=10`);
    expect(
      trades.body.map((t) => t.id),
      "the quiet market's newest trade after the restart",
    ).toContain(`gj-${quiet}-${q + 2}`);
    expect((await ingest(env, "*", batchOf(quiet, q + 3))).book, "the quiet market goes on from its book").toBe("applied");
  });

  it("a market's records are read from the slots from its oldest uncovered row, not the whole ring (fails before: every row of the ring read)", async () => {
    // A journal of its own, in an object with no journal: 64 slots, 60 rows; the market in the last 10.
    const stub = env.DEMO_FEED_OBJECT.get(env.DEMO_FEED_OBJECT.idFromName("journal-slots"));
    await runInDurableObject(stub, (_instance, state) => {
      const journal = new JournalOf(state.storage.sql);
      journal.slots = 64;
      const other = journal.ringOf("OTHER");
      const market = journal.ringOf("MARKET");
      for (let n = 1; n <= 60; n++) {
        other.put(n, `o${n}`);
        if (n > 50) market.put(n - 50, `m${n - 50}`);
        journal.write();
      }
      let rows: { change: string }[] = [];
      const { read } = rowsCounted([journal], () => {
        rows = market.rows(0);
      });
      expect(
        rows.map((r) => r.change),
        "the market's records",
      ).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 1}`));
      expect(read, "rows read: the 10 rows from the market's first").toBe(10);
    });
  });

  it("after a restart a market is due for a cover exactly when it was before: the rows mark where each market's uncovered records begin (fails before: every market with a record in the ring's oldest row was due, and loaded by the host's first commit)", async () => {
    const stub = env.DEMO_FEED_OBJECT.get(env.DEMO_FEED_OBJECT.idFromName("journal-marks"));
    await runInDurableObject(stub, (_instance, state) => {
      const live = new JournalOf(state.storage.sql);
      live.slots = 8;
      const n: Record<string, number> = { AAA: 0, BBB: 0 };
      const tick = (journal: GroupJournal, symbol: string) => {
        journal.ringOf(symbol).put(++n[symbol]!, `${symbol}${n[symbol]}`);
        // As the host's commit: the markets due cover (a snapshot) before the row is written.
        for (const due of journal.dueForCover()) journal.ringOf(due).covered();
      };
      // Twenty ticks, AAA and BBB in turn: each covers as the ring of eight comes round.
      for (let t = 0; t < 20; t++) {
        tick(live, t % 2 === 0 ? "AAA" : "BBB");
        live.write();
      }
      const restarted = new JournalOf(state.storage.sql);
      restarted.slots = 8;
      // The next tick holds a record of BBB, in both: the same markets are due.
      const records = { AAA: live.ringOf("AAA").rows(0), BBB: live.ringOf("BBB").rows(0) };
      live.ringOf("BBB").put(n.BBB! + 1, "next");
      restarted.ringOf("BBB").put(n.BBB! + 1, "next");
      expect(restarted.dueForCover(), "due for a cover after the restart, as the running journal says").toEqual(live.dueForCover());
      expect(live.dueForCover(), "none: both covered as the ring came round").toEqual([]);
      expect({ AAA: restarted.ringOf("AAA").rows(0).length, BBB: restarted.ringOf("BBB").rows(0).length - 1 }, "each market's records read back").toEqual({
        AAA: records.AAA.length,
        BBB: records.BBB.length,
      });
    });
  });
});
