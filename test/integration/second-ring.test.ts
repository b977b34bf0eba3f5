import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MINUTE_MS, SECOND_MS } from "../../src/domain/intervals";
import type { MarketObject } from "../../src/market/market-object";
import { tablePrefixOf } from "../../src/writes/market-storage";
import type { MarketStore } from "../../src/writes/market-store";
import { SECOND_SLOTS } from "../../src/writes/second-ring";
import { hostOf } from "../support/registry";
import { rowsCounted } from "../support/rows-counted";

/** A minute long past, so the test's clock is its own. */
const M0 = Date.UTC(2026, 0, 1, 10);
const DAY_AND_HOUR = SECOND_SLOTS * MINUTE_MS;

const trade = (time: number, n: number) => ({ price: BigInt(1_000 + n), quantity: BigInt(1 + (n % 3)), side: "buy" as const, time });

describe("the second buckets are a ring of 25 hours of minutes (src/writes/second-ring.ts)", () => {
  it("a minute's seconds are written over the minute 25 hours before: one row, and nothing to delete (fails before: a row each, and each deleted 25 hours on)", async () => {
    const symbol = "XRPUSDT";
    await runInDurableObject(await hostOf(symbol), (instance: MarketObject, state) => {
      const candles = (instance.engine(symbol) as unknown as { store: MarketStore }).store.candles;
      const ring = `${tablePrefixOf(symbol)}second_ring`;
      const rows = () => state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${ring}`).one().n;
      // Each statement's rows as the runtime counts them, over one call.
      const written = (work: () => void) => rowsCounted([candles, (candles as unknown as { seconds: unknown }).seconds], work).written;
      const seconds = (minute: number) => [...candles.buckets(SECOND_MS, minute, minute + MINUTE_MS - 1, "ASC")].map((b) => [b.minute, b.count]);
      // Three minutes, a trade in two of their seconds each, each flushed once it ends.
      for (let m = 0; m < 3; m++) {
        candles.stageTrade(trade(M0 + m * MINUTE_MS + 1_000, m));
        candles.stageTrade(trade(M0 + m * MINUTE_MS + 2_000, m));
        candles.flush(M0 + (m + 1) * MINUTE_MS + 100);
      }
      expect(rows(), "a row a minute").toBe(3);
      expect(seconds(M0 + MINUTE_MS), "the second minute's seconds").toEqual([
        [M0 + MINUTE_MS + 1_000, 1],
        [M0 + MINUTE_MS + 2_000, 1],
      ]);
      // 25 hours on, the same minutes of the clock trade again: their rows go over the old ones
      // (the first flush then writes the closed hour and day of the first minutes: not counted).
      const later = M0 + DAY_AND_HOUR;
      candles.flush(later);
      for (let m = 0; m < 2; m++) {
        candles.stageTrade(trade(later + m * MINUTE_MS + 3_000, m));
        const flushed = written(() => candles.flush(later + (m + 1) * MINUTE_MS + 100));
        // Its minute (a new row) and its seconds' row (written over, in place).
        expect(flushed, `rows written by minute ${m}'s flush 25 hours on`).toBe(2);
      }
      expect(rows(), "rows in the ring").toBe(3);
      expect(seconds(later), "the new minute's seconds").toEqual([[later + 3_000, 1]]);
      expect(seconds(M0), "the old minute's seconds are gone with it").toEqual([]);
      // The prune: the third minute, 25 hours old and not written over (quiet since), goes; nothing else.
      const pruned = written(() => candles.pruneSeconds(later + 3 * MINUTE_MS + 100 + 3 * MINUTE_MS - DAY_AND_HOUR));
      expect(pruned, "rows the prune deletes").toBe(1);
      expect(rows(), "rows left").toBe(2);
      expect(seconds(M0 + 2 * MINUTE_MS), "the quiet minute's seconds").toEqual([]);
      // A late trade 25 hours old or more is not kept: the ring holds the newest minute of its slot.
      candles.stageTrade(trade(M0 + 5_000, 9));
      candles.flush(later + 3 * MINUTE_MS);
      expect(seconds(later), "the slot's newest minute, untouched").toEqual([[later + 3_000, 1]]);
      // A minute's seconds are its ring row alone.
      const read = candles.bucketRowsRead;
      seconds(later);
      expect(candles.bucketRowsRead - read, "rows read for a minute's seconds").toBe(1);
    });
  });
});
