import { runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MarketObject } from "../../src/market/market-object";
import type { BookEntry } from "../../src/writes/book-entries";
import { BookLog, type BookLogPosition } from "../../src/writes/book-log";
import { scopedSql } from "../../src/writes/market-storage";
import { type ClosedSegment, openSegments } from "../../src/writes/open-segments";
import { hostOf } from "../support/registry";
import { rowsCounted } from "../support/rows-counted";

/** A book log in its own tables of the host's SQLite (`prefix`), its open texts in `segments` (none held with a bound of 0). */
function logIn(sql: SqlStorage, prefix: string, held: boolean) {
  return new BookLog(scopedSql(sql, prefix), undefined, { segments: openSegments(held ? undefined : 0), key: prefix });
}

type Log = ReturnType<typeof logIn>;
/** What a log's append reads and writes, counted by the runtime's cursors (the log's own statements and its ring's). */
const counted = (log: Log, work: () => void) => rowsCounted([log, (log as unknown as { ring: unknown }).ring], work);

const entry = (sequence: number, time: number, levels: number, fingerprint?: string): BookEntry => ({
  time,
  updates: [
    {
      type: "delta",
      sequence,
      bids: Array.from({ length: levels }, (_, i) => [BigInt(1_000_000 - i * 7 - sequence), BigInt(1 + i * sequence)] as [bigint, bigint]),
      asks: [[BigInt(1_000_100 + sequence), 0n]],
    },
  ],
  ...(fingerprint ? { fingerprint } : {}),
});

const book = (sequence: number, time: number) => () => ({
  sequence,
  time,
  bids: [[BigInt(999_000 + sequence), 5n]] as [bigint, bigint][],
  asks: [[BigInt(1_001_000 + sequence), 7n]] as [bigint, bigint][],
  fingerprint: `f${sequence}`,
});

async function inHost<T>(work: (sql: SqlStorage, storage: DurableObjectStorage) => T): Promise<T> {
  return runInDurableObject(await hostOf("BTCUSDT"), (instance: MarketObject) => {
    const { storage } = (instance as unknown as { ctx: DurableObjectState }).ctx;
    return work(storage.sql, storage);
  });
}

describe("a market's open book segment is held as its R2 text as it grows (src/writes/open-segments.ts)", () => {
  it("closing a segment reads no row back while its text is held: the close joins what the commits logged (fails before: every record since the snapshot read, parsed and written out again inside the group's commit)", async () => {
    await inHost((sql) => {
      const held = logIn(sql, "osa_", true);
      const readBack = logIn(sql, "osb_", false);
      for (const log of [held, readBack]) {
        let position: BookLogPosition = { snapshotN: 0, logN: 0 };
        // The first snapshot starts the held text: the segment before it is read back in either log.
        position = log.append(position, [entry(1, 1_000, 3)], book(1, 1_000), [], 0, true).position;
        for (let s = 2; s <= 60; s++) position = log.append(position, [entry(s, 1_000 + s, 20, `fp${s}`)], book(s, 1_000 + s)).position;
        let closed: ClosedSegment | undefined;
        const rows = counted(log, () => {
          closed = log.append(position, [entry(61, 2_000, 2)], book(61, 2_000), [], 0, true).closed;
        });
        expect(closed?.baseSeq, "the closed segment starts at the snapshot").toBe(1);
        expect(closed?.lastSeq, "and ends with the closing commit").toBe(61);
        // The one row read is the snapshot's own (its upsert reads the row it replaces).
        if (log === held) expect(rows.read, "rows read by a close whose text is held").toBeLessThanOrEqual(1);
        else
          expect(rows.read, "rows read back by a close whose text is not held (the 59 records since the snapshot, and the snapshot)").toBeGreaterThanOrEqual(
            60,
          );
      }
    });
  });

  it("after a start the market's load holds the text again, so its first close reads nothing back either (fails before the load held it: the whole segment read again)", async () => {
    await inHost((sql) => {
      let log = logIn(sql, "osc_", true);
      let position: BookLogPosition = { snapshotN: 0, logN: 0 };
      position = log.append(position, [entry(1, 1_000, 3)], book(1, 1_000), [], 0, true).position;
      for (let s = 2; s <= 40; s++) position = log.append(position, [entry(s, 1_000 + s, 20, `fp${s}`)], book(s, 1_000 + s)).position;
      // A start: the object's memory gone, the market loaded from storage.
      log = logIn(sql, "osc_", true);
      log.read(position);
      let closed: ClosedSegment | undefined;
      const rows = counted(log, () => {
        closed = log.append(position, [entry(41, 2_000, 2)], book(41, 2_000), [], 0, true).closed;
      });
      expect([closed?.baseSeq, closed?.lastSeq], "the closed segment's ends").toEqual([1, 41]);
      expect(rows.read, "rows read by the first close after a start (the snapshot's upsert)").toBeLessThanOrEqual(1);
    });
  });

  it("the joined text is the read-back text, whatever commits, snapshots, restarts and undone commits come (property)", async () => {
    const step = fc.oneof(
      {
        arbitrary: fc.record({
          kind: fc.constant("commit" as const),
          entries: fc.nat({ max: 3 }),
          levels: fc.integer({ min: 1, max: 6 }),
          fingerprint: fc.boolean(),
        }),
        weight: 4,
      },
      { arbitrary: fc.record({ kind: fc.constant("snapshot" as const), entries: fc.nat({ max: 1 }) }), weight: 2 },
      { arbitrary: fc.record({ kind: fc.constant("restart" as const), load: fc.boolean() }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant("undone" as const), snapshot: fc.boolean() }), weight: 1 },
    );
    let run = 0;
    await inHost((sql, storage) => {
      fc.assert(
        fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), (steps) => {
          run += 1;
          // Two logs fed the same commits: one holds its open text (restarted at random: its text gone), the other always reads back.
          const prefixes = [`osp${run}a_`, `osp${run}b_`];
          let held = logIn(sql, prefixes[0]!, true);
          const readBack = logIn(sql, prefixes[1]!, false);
          let position: BookLogPosition = { snapshotN: 0, logN: 0 };
          let sequence = 0;
          let time = 10_000;
          const entries = (n: number, levels: number, fingerprint: boolean) =>
            Array.from({ length: n }, () => entry(++sequence, ++time, levels, fingerprint ? `f${sequence}` : undefined));
          const both = (batch: BookEntry[], force: boolean) => {
            const a = held.append(position, batch, book(sequence, time), [], time, force);
            const b = readBack.append(position, batch, book(sequence, time), [], time, force);
            expect(a.position, "the two logs' positions").toEqual(b.position);
            expect(a.closed, `the closed segment after ${position.logN} records`).toEqual(b.closed);
            position = a.position;
          };
          for (const s of steps) {
            if (s.kind === "commit") both(entries(s.entries, s.levels, s.fingerprint), false);
            else if (s.kind === "snapshot") both(entries(s.entries, 2, true), true);
            else if (s.kind === "restart") {
              // Its text gone; a market's load reads the book back, which holds it again.
              held = logIn(sql, prefixes[0]!, true);
              if (s.load) held.read(position);
            } else {
              // A commit whose market's part was undone: written, then rolled back in both logs.
              const batch = entries(1, 2, true);
              for (const log of [held, readBack]) {
                expect(() =>
                  storage.transactionSync(() => {
                    log.append(position, batch, book(sequence, time), [], time, s.snapshot);
                    throw new Error("undone");
                  }),
                ).toThrow("undone");
              }
            }
          }
          both(entries(1, 2, false), true);
        }),
        { numRuns: 100 },
      );
    });
  });
});
