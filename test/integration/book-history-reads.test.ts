import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { IngestBody } from "../../src/market/schemas";
import { seriesKey } from "../../src/metrics/counts";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { atScale, wideUpdate } from "../support/book-levels";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

type Counted = {
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};
const READ = seriesKey("mds_storage_rows_read_total", { object: "market" });

/** Rows the market hosts read since the last call (the first starts the count). */
async function rowsRead(symbol: string, start = false): Promise<number> {
  return runInDurableObject(await hostOf(symbol), async (instance: MarketObject) => {
    const { holder } = (instance as unknown as Counted).meter;
    if (start) await holder.flush(env, Date.now(), true);
    return holder.counts.take().counters[READ] ?? 0;
  });
}

/** SOLBTC's batch `sequence`: a snapshot at 1, then a delta of one level each side. */
const batch = (sequence: number): IngestBody => ({
  symbol: "SOLBTC",
  book: {
    type: sequence === 1 ? "snapshot" : "delta",
    sequence,
    bids: [[`0.00${String(2000 - (sequence % 50)).padStart(5, "0")}`, `${1 + (sequence % 7)}.00`]],
    asks: [[`0.00${String(3000 + (sequence % 50)).padStart(5, "0")}`, `${1 + (sequence % 5)}.00`]],
  },
  trades: [],
});

interface Book {
  sequence: number;
  bids: [string, string][];
  asks: [string, string][];
}

describe("book history reads cost the host a bounded amount (docs/history.md#book-history)", () => {
  it("a read of the open segment reads no journal row for the segment (the log holds its text) and then parses only the records committed since the last read, and a book asked again is one answer (fails before: every read parsed the whole segment's journal rows; then the first read still read all of them)", async () => {
    await ensureRegistry(env);
    for (let s = 1; s <= 300; s++) expect((await ingest(env, "*", batch(s))).book, `batch ${s}`).toBe("applied");
    await rowsRead("SOLBTC", true);
    const first = await callJson<Book>("/api/orderbook/SOLBTC?sequence=150&depth=100");
    expect(first.body.sequence, "?sequence=150").toBe(150);
    const firstRows = await rowsRead("SOLBTC");
    // The segment's 299 records are decoded from the text the log holds, not read back.
    expect(firstRows, "rows the first read reads").toBeLessThanOrEqual(3);
    expect((await ingest(env, "*", batch(301))).book, "batch 301").toBe("applied");
    await rowsRead("SOLBTC", true);
    const next = await callJson<Book>("/api/orderbook/SOLBTC?sequence=151&depth=100");
    expect(next.body.sequence, "?sequence=151").toBe(151);
    expect(await rowsRead("SOLBTC"), "rows the next read reads: the one record committed since").toBeLessThanOrEqual(3);
    const again = await callJson<Book>("/api/orderbook/SOLBTC?sequence=151&depth=100");
    expect(again.body, "the same book asked again").toEqual(next.body);
    // The answers are the books they were: every sequence replayed from the snapshot equals the read.
    const levels = new Map<string, string>();
    for (let s = 1; s <= 151; s++) {
      const update = batch(s).book as { bids: [string, string][]; asks: [string, string][] };
      if (s === 1) levels.clear();
      levels.set(`b${update.bids[0]![0]}`, update.bids[0]![1]);
      levels.set(`a${update.asks[0]![0]}`, update.asks[0]![1]);
    }
    const bids = [...levels].filter(([k]) => k.startsWith("b")).length;
    expect(next.body.bids.length + next.body.asks.length, "levels at sequence 151").toBe(levels.size);
    expect(next.body.bids.length, "bids at sequence 151").toBe(bids);
  });

  it("a closed segment the host still reads (before R2 and the index have it) is read and decoded once, whatever the reads — six books of it, three at once, read its text's rows once (fails before: each read read the text back and decoded the whole segment, ~75 ms of the host's thread a read of a busy market's)", async () => {
    await ensureRegistry(env);
    const symbol = "XRPUSDT";
    const market = findMarket(symbol)!;
    const object = await hostOf(symbol);
    // The text's parts while the segment waits for R2 (read outside the meter).
    const kept = () =>
      runInDurableObject(
        object,
        (_: MarketObject, state) => state.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${tablePrefixOf(symbol)}book_segment_text`).one().n,
      );
    // Updates of 10,000 levels (about 170 KB logged each) until one closes the segment: it waits for R2 (the tests upload by hand).
    let sequence = 0;
    do {
      sequence += 1;
      expect((await ingest(env, "*", { symbol, book: [wideUpdate(market, sequence, sequence === 1 ? "snapshot" : "delta")] })).book, `batch ${sequence}`).toBe(
        "applied",
      );
      expect(sequence, "a segment closed within 20 batches").toBeLessThan(20);
    } while ((await kept()) === 0);
    const closedAt = sequence - 1;
    await rowsRead(symbol, true);
    const asked = [1, 2, closedAt, 2, 1, closedAt - 1];
    const first = await Promise.all(asked.slice(0, 3).map((n) => callJson<Book>(`/api/orderbook/${symbol}?sequence=${n}&depth=2`)));
    const rest = [];
    for (const n of asked.slice(3)) rest.push(await callJson<Book>(`/api/orderbook/${symbol}?sequence=${n}&depth=3`));
    for (const [i, { status, body }] of [...first, ...rest].entries()) {
      const n = asked[i]!;
      expect([status, body.sequence, body.bids[0]![1], body.asks[0]![1]], `?sequence=${n}`).toEqual([
        200,
        n,
        atScale(1_000 + n, market.quantityScale),
        atScale(2_000 + n, market.quantityScale),
      ]);
    }
    const parts = await kept();
    expect(await rowsRead(symbol), `rows the six reads read: the text's ${parts} parts once, and a segment's row a read`).toBeLessThanOrEqual(
      parts + asked.length,
    );
    // A second segment closed while the first still waits: each book is read from its own (one held per segment, not per market).
    const waiting = () =>
      runInDurableObject(
        object,
        (_: MarketObject, state) =>
          state.storage.sql.exec<{ n: number }>(`SELECT count(DISTINCT base_seq) AS n FROM ${tablePrefixOf(symbol)}book_segment_text`).one().n,
      );
    do {
      sequence += 1;
      expect((await ingest(env, "*", { symbol, book: [wideUpdate(market, sequence, "delta")] })).book, `batch ${sequence}`).toBe("applied");
      expect(sequence, "a second segment closed within 40 batches").toBeLessThan(40);
    } while ((await waiting()) < 2);
    for (const n of [closedAt + 1, 2, sequence - 2, 1]) {
      const { status, body } = await callJson<Book>(`/api/orderbook/${symbol}?sequence=${n}&depth=2`);
      expect([status, body.sequence, body.bids[0]?.[1]], `?sequence=${n} with two segments waiting for R2`).toEqual([
        200,
        n,
        atScale(1_000 + n, market.quantityScale),
      ]);
    }
  }, 60_000);

  it("a book at any sequence is the book built there, in whatever order the sequences are asked: from the segment's base or from the read's checkpoint (property)", async () => {
    await ensureRegistry(env);
    const market = findMarket("SOLBTC")!;
    const at = (await callJson<Book>("/api/orderbook/SOLBTC?depth=1")).body.sequence;
    // A snapshot, then 400 batches (400 entries of the open segment: the checkpoint moves past 128).
    const first = at + 1;
    const model = new Map<number, Map<string, number>>();
    const levels = new Map<string, number>();
    // Levels over 400 prices a side, so a change missed is seldom written over before a read.
    const spread = (s: number): IngestBody => ({
      symbol: "SOLBTC",
      book: {
        type: s === first ? "snapshot" : "delta",
        sequence: s,
        bids: [[`0.00${String(2000 - ((s * 7919) % 400)).padStart(5, "0")}`, `${1 + (s % 7)}.00`]],
        asks: [[`0.00${String(3000 + ((s * 104_729) % 400)).padStart(5, "0")}`, `${1 + (s % 5)}.00`]],
      },
      trades: [],
    });
    for (let s = first; s <= first + 400; s++) {
      const body = spread(s);
      expect((await ingest(env, "*", body)).book, `batch ${s}`).toBe("applied");
      const update = body.book as { bids: [string, string][]; asks: [string, string][] };
      if (s === first) levels.clear();
      levels.set(`b${Number(update.bids[0]![0])}`, Number(update.bids[0]![1]));
      levels.set(`a${Number(update.asks[0]![0])}`, Number(update.asks[0]![1]));
      model.set(s, new Map(levels));
    }
    const object = await hostOf("SOLBTC");
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: first, max: first + 400 }), fc.integer({ min: 1_000, max: 1_200 })), { minLength: 1, maxLength: 12 }),
        async (asked) => {
          const answers = await runInDurableObject(object, async (instance: MarketObject) => {
            const out: { sequence: number; bids: [string, string][]; asks: [string, string][] }[] = [];
            for (const [sequence, depth] of asked) {
              const answer = await instance.bookAt(market, { sequence }, depth);
              if ("problem" in answer) throw new Error(`?sequence=${sequence}: ${JSON.stringify(answer.problem)}`);
              out.push(JSON.parse(answer.text));
            }
            return out;
          });
          for (const [i, [sequence]] of asked.entries()) {
            const got = new Map<string, number>();
            for (const [price, quantity] of answers[i]!.bids) got.set(`b${Number(price)}`, Number(quantity));
            for (const [price, quantity] of answers[i]!.asks) got.set(`a${Number(price)}`, Number(quantity));
            expect([answers[i]!.sequence, got], `the book at ${sequence} (asked ${asked.map(([s]) => s).join(", ")})`).toEqual([sequence, model.get(sequence)]);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it("?sequence= of the live book staged for the tick is answered once its commit is durable, final (a failed commit could give its sequence to another batch)", async () => {
    await ensureRegistry(env);
    const market = findMarket("SOLBTC")!;
    const object = await hostOf("SOLBTC");
    const at = (await callJson<Book>("/api/orderbook/SOLBTC?depth=1")).body.sequence;
    await runInDurableObject(object, (instance: MarketObject) => {
      instance.tickMs = 60_000;
    });
    // The last commit began the tick: this batch waits for the next.
    const sent = ingest(env, "*", batch(at + 1));
    await until(async () => ((await callJson<Book>("/api/orderbook/SOLBTC?depth=1")).body.sequence === at + 1 ? true : undefined), {
      what: "the batch staged",
    });
    let read: Promise<unknown> | undefined;
    await runInDurableObject(object, (instance: MarketObject) => {
      read = instance.bookAt(market, { sequence: at + 1 }, 10);
    });
    await runInDurableObject(object, (instance: MarketObject) => {
      instance.tickMs = 0;
      instance.writer.tick.commitNow();
    });
    expect((await sent).book, "the batch, committed").toBe("applied");
    const answer = (await read) as { final: boolean; sequence: number };
    expect([answer.sequence, answer.final], "the staged sequence, answered once committed").toEqual([at + 1, true]);
  });
});
