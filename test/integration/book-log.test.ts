import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { SNAPSHOT_EVERY } from "../../src/writes/book-log";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";

/** The object's meter and the isolate's holder it counts into. */
type Counted = {
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};

async function book(symbol: string) {
  const { status, body } = await callJson<{ sequence: number; bids: string[][]; asks: string[][] }>(`/api/orderbook/${symbol}?depth=1000`);
  expect(status, "the book read").toBe(200);
  return body;
}

describe("the book in storage is a snapshot and a log of batches (src/writes/book-log.ts)", () => {
  it("writes one row a batch however many levels it changes: the change, from which the market's record is read back (before: two, and one per level before the log)", async () => {
    const symbol = "SOLBTC";
    const levels = (n: number, from: number, quantity = "1.00") =>
      Array.from({ length: n }, (_, i): [string, string] => [(0.002 + (from + i) * 0.000001).toFixed(6), quantity]);
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: levels(50, 0), asks: [["0.010000", "1.00"]] } });
    const market = await hostOf(symbol);
    const take = () =>
      runInDurableObject(market, async (instance: MarketObject) => {
        const counted = instance as unknown as Counted;
        await Promise.resolve();
        return counted.meter.holder.counts.take().counters['mds_storage_rows_written_total{object="market"}'] ?? 0;
      });
    // What came before is handed on now, so nothing is due again for 10 s.
    await runInDurableObject(market, async (instance: MarketObject) => (instance as unknown as Counted).meter.holder.flush(env, Date.now(), true));
    await take();
    for (let i = 0; i < 10; i++) {
      const result = await ingest(env, "*", { symbol, book: { type: "delta", sequence: 2 + i, bids: levels(40, i * 4, `${2 + i}.00`), asks: [] } });
      expect(result.book, `batch ${i}`).toBe("applied");
    }
    // Before the log: a row per level (40 a batch) and five for the metadata, 450 in all; with the
    // log and the record, two a batch; now one, and the alarm that sends the market's summary once a
    // second (a row when it is set).
    const written = await take();
    expect(written, "rows written by 10 batches of 40 level changes").toBeGreaterThanOrEqual(10);
    expect(written, "rows written by 10 batches of 40 level changes").toBeLessThanOrEqual(12);
  });

  it("comes back after an eviction exactly as it was, across snapshots, for any sequence of changes", async () => {
    const symbol = "ETHBTC";
    let sequence = 0;
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: ++sequence, bids: [["0.05000", "1.000"]], asks: [["0.06000", "1.000"]] } });
    const level = fc.tuple(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 5 }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.array(level, { maxLength: 6 }), fc.array(level, { maxLength: 6 })), { minLength: 360, maxLength: 480 }),
        async (batches) => {
          const side = (entries: [number, number][], base: number, step: number) => [
            ...new Map(entries.map(([offset, quantity]) => [(base + step * offset * 0.00001).toFixed(5), quantity === 0 ? "0" : `${quantity}.000`])),
          ];
          const updates = batches.map(([bids, asks]) => ({
            type: "delta" as const,
            sequence: ++sequence,
            bids: side(bids, 0.05, -1),
            asks: side(asks, 0.06, 1),
          }));
          // Eight updates a batch, as a publisher's burst sends them: each is a change of the log all the same.
          for (let i = 0; i < updates.length; i += 8) await ingest(env, "*", { symbol, book: updates.slice(i, i + 8) });
          const live = await book(symbol);
          await evictDurableObject(await hostOf(symbol));
          const restored = await book(symbol);
          expect({ sequence: restored.sequence, bids: restored.bids, asks: restored.asks }, `the book at ${live.sequence} after an eviction`).toEqual({
            sequence: live.sequence,
            bids: live.bids,
            asks: live.asks,
          });
        },
      ),
      // Few evictions (each about a second here), many batches between them: past SNAPSHOT_EVERY in all.
      { numRuns: 12 },
    );
    expect(sequence, "more batches than a snapshot's interval, so the ring and its snapshots were both read back").toBeGreaterThan(SNAPSHOT_EVERY);
  }, 180_000);
});
