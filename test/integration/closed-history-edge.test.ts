import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { LocalBook } from "../../client/src/index";
import { createApp } from "../../src/app";
import { marketObject, metricsObject, objectCalls } from "../../src/core/object-ids";
import { unwrap } from "../../src/core/problem";
import { HOUR_MS, MINUTE_MS } from "../../src/domain/intervals";
import { decodeBlock, segmentKey } from "../../src/history/book-history";
import { closedBookAt, closedHistoryOf } from "../../src/history/closed-book-reads";
import { BLOCK_ENTRIES, decodeIndex } from "../../src/history/segment-blocks";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { seriesKey } from "../../src/metrics/counts";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { bookPage, type PageSource, streamAt } from "../../src/streams/catch-up-pages";
import { parseStreamName } from "../../src/streams/protocol";
import type { WireBook } from "../../src/streams/wire-book";
import { atScale, wideUpdate } from "../support/book-levels";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openSocket } from "./streams-support";

type Flushed = { meter: { holder: { flush(env: Env, now: number, force: boolean): Promise<void> | undefined } } };
type Uploads = { bookHistory: { upload(symbol: string): Promise<number> } };

/** The batches' clock: a second a batch, from a minute into the hour two hours back (all in one hour: no hour closes the segment). */
const T0 = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 2 * HOUR_MS + MINUTE_MS;
/** Small batches before the wide ones that close the segment: more than a block's 128 KB of them. */
const SMALL = 300;

/**
 * One closed segment of sequences 1…SMALL + 8: a small snapshot, SMALL - 1 batches of twenty levels a
 * side (apart by a second), then one batch of seven wide updates that passes the segment's 1 MB
 * and closes it; two more batches, now, in the open segment. Uploaded, so its blocks are in R2 and its
 * row in D1.
 */
async function closedSegment(SYMBOL: string) {
  await ensureRegistry(env);
  const market = findMarket(SYMBOL)!;
  const level = (units: number, quantity: number): [string, string] => [atScale(units, market.priceScale), atScale(quantity, market.quantityScale)];
  vi.useFakeTimers({ toFake: ["Date"], now: T0 });
  try {
    const snapshot = { type: "snapshot" as const, sequence: 1, bids: [level(40_001, 1)], asks: [level(50_001, 1)] };
    expect((await ingest(env, "*", { symbol: SYMBOL, book: [snapshot] })).book, "the snapshot").toBe("applied");
    for (let sequence = 2; sequence <= SMALL; sequence++) {
      vi.setSystemTime(T0 + sequence * 1000);
      // Twenty levels a side (about 600 bytes a batch): the small batches pass a block's 128 KB, so the segment is cut by bytes.
      const sides = (from: number) => Array.from({ length: 20 }, (_, i) => level(from + ((sequence + i * 3) % 60), sequence + i));
      const update = { type: "delta" as const, sequence, bids: sides(40_001), asks: sides(50_001) };
      expect((await ingest(env, "*", { symbol: SYMBOL, book: [update] })).book, `batch ${sequence}`).toBe("applied");
    }
    vi.setSystemTime(T0 + (SMALL + 1) * 1000);
    const wide = Array.from({ length: 7 }, (_, i) => wideUpdate(market, SMALL + 1 + i, "delta"));
    expect((await ingest(env, "*", { symbol: SYMBOL, book: wide })).book, "the wide batch that closes the segment").toBe("applied");
  } finally {
    vi.useRealTimers();
  }
  // Two more now, in the open segment (in the clock's hour: a segment holding a past hour is closed by the market's alarm).
  for (const sequence of [SMALL + 8, SMALL + 9]) {
    const update = { type: "delta" as const, sequence, bids: [level(40_100, sequence)], asks: [] as [string, string][] };
    expect((await ingest(env, "*", { symbol: SYMBOL, book: [update] })).book, `open batch ${sequence}`).toBe("applied");
  }
  const host = await hostOf(SYMBOL);
  await runInDurableObject(host, (object: MarketObject) => (object.engine(SYMBOL) as unknown as Uploads).bookHistory.upload(SYMBOL));
  // The host's counts as the venue's totals: what it holds is handed on first (so a hand-over of its own, due every
  // METRICS_FLUSH_MS, cannot take a count from under the test).
  const hostCounts = async () => {
    await runInDurableObject(host, (object: MarketObject) => (object as unknown as Flushed).meter.holder.flush(env, Date.now(), true));
    return (await metricsObject(env).totalsNow()).counters;
  };
  return { market, hostCounts };
}

const app = createApp();

let reads = 0;
/** A read through the app in this isolate, whose counts the test reads (`isolateMetrics`); each from its own address (the public limit). */
async function read(path: string): Promise<{ status: number; body: any; response: Response }> {
  reads += 1;
  const response = await app.request(path, { headers: { "CF-Connecting-IP": `198.51.101.${reads}` } }, env, createExecutionContext());
  const body = await response.json();
  return { status: response.status, body, response };
}

/** The host's history reads between two of its totals. */
const hostReads = (before: Record<string, number>, after: Record<string, number>) => {
  const read = (segment: string) =>
    (after[seriesKey("mds_history_reads_total", { segment })] ?? 0) - (before[seriesKey("mds_history_reads_total", { segment })] ?? 0);
  return { open: read("open"), closed: read("closed") };
};

describe("closed book history is read where it lies (docs/history.md#closed-history)", () => {
  it("a book at any sequence or moment of a closed segment is answered from one block — one R2 range read, at most BLOCK_ENTRIES batches replayed — with no call to the market's host, and equals the host's answer (fails before: every closed read went to the host, which decoded the whole segment)", async () => {
    const SYMBOL = "ETHUSDT";
    const { market, hostCounts } = await closedSegment(SYMBOL);
    const row = await env.DB.prepare("SELECT base_seq, last_seq, bytes, blocks FROM book_segments WHERE symbol = ?")
      .bind(SYMBOL)
      .first<{ base_seq: number; last_seq: number; bytes: number; blocks: string }>();
    expect([row?.base_seq, row?.last_seq], "the closed segment's row, published in D1").toEqual([0, SMALL + 7]);
    const blocks = decodeIndex(row!.blocks, row!.bytes);
    expect(blocks.length, "the segment is cut into blocks").toBeGreaterThan(1);
    for (const [i, block] of blocks.entries()) {
      const object = await env.HISTORY.get(segmentKey(SYMBOL, 0), { range: { offset: block.offset, length: block.bytes } });
      const decoded = await decodeBlock(await object!.arrayBuffer());
      expect(decoded.entries.length, `block ${i}'s batches`).toBeLessThanOrEqual(BLOCK_ENTRIES);
      expect(decoded.base.sequence, `block ${i}'s checkpoint`).toBe(block.baseSeq);
    }

    // Around the second block's checkpoint, and across the first.
    const second = blocks[1]!.baseSeq;
    const sequences = [1, 2, 3, 100, second - 1, second, second + 1, SMALL - 1, SMALL, SMALL + 3, SMALL + 7];
    // The location's cache outlives a run's storage: the answers this test asks for are not in it.
    for (const sequence of [...sequences, SMALL + 8]) {
      for (const depth of [5, 50]) await caches.default.delete(`https://book-history.internal/${SYMBOL}/${sequence}/${depth}`);
    }
    const start = await hostCounts();
    const calls = objectCalls.market;
    const moments = [T0 + 1500, T0 + 200_000, T0 + (second + 1) * 1000, T0 + (SMALL - 1) * 1000 + 500];
    const edge: Record<string, unknown> = {};
    for (const sequence of sequences) {
      const answer = await read(`/api/orderbook/${SYMBOL}?sequence=${sequence}&depth=50`);
      expect([answer.status, answer.body.sequence], `the book at ${sequence}`).toEqual([200, sequence]);
      expect(answer.response.headers.get("Cache-Control"), `the book at ${sequence} is final`).toContain("immutable");
      edge[`s${sequence}`] = answer.body;
    }
    for (const time of moments) {
      const answer = await read(`/api/orderbook/${SYMBOL}?at=${time}&depth=50`);
      expect(answer.status, `the book at ${new Date(time).toISOString()}`).toBe(200);
      edge[`t${time}`] = answer.body;
    }
    expect(objectCalls.market - calls, "calls to a market's host for the closed reads").toBe(0);
    expect(hostReads(start, await hostCounts()), "the market's host read no history").toEqual({ open: 0, closed: 0 });
    expect(objectCalls.market - calls, "calls to a market's host for the closed reads").toBe(0);
    expect(hostReads(start, await hostCounts()), "the market's host read no history").toEqual({ open: 0, closed: 0 });

    // The same reads made directly, with the R2 gets counted: at most one range read each, none for a block held.
    const gets: { key: string; range?: R2Range }[] = [];
    const bucket = new Proxy(env.HISTORY, {
      get: (target, prop) =>
        prop === "get"
          ? (key: string, options?: R2GetOptions) => {
              gets.push({ key, ...(options?.range ? { range: options.range as R2Range } : {}) });
              return target.get(key, options);
            }
          : Reflect.get(target, prop, target).bind?.(target),
    });
    const sources: string[] = [];
    const history = { db: env.DB, bucket, counted: (source: string) => sources.push(source) };
    for (const sequence of sequences) {
      const before = gets.length;
      const answer = await closedBookAt(history, market, { sequence }, 50);
      expect(answer && JSON.parse(answer.text), `the book at ${sequence}, read directly`).toEqual(edge[`s${sequence}`]);
      expect(gets.length - before, `R2 reads for the book at ${sequence}`).toBeLessThanOrEqual(1);
    }
    expect(sources.length, "every direct read counted where its block came from").toBe(sequences.length);
    expect(
      gets.every((g) => g.range !== undefined),
      "every R2 read a range",
    ).toBe(true);
    expect(gets.length, "at most one range read a block").toBeLessThanOrEqual(blocks.length);

    // The host's own answers (it reads the whole segment back) are the same books.
    for (const sequence of sequences) {
      const answer = unwrap(await marketObject(env, market).bookAt(market, { sequence }, 50));
      expect(edge[`s${sequence}`], `the book at ${sequence}, edge and host`).toEqual(JSON.parse(answer.text));
    }
    for (const time of moments) {
      const answer = unwrap(await marketObject(env, market).bookAt(market, { time }, 50));
      expect(edge[`t${time}`], `the book at ${new Date(time).toISOString()}, edge and host`).toEqual(JSON.parse(answer.text));
    }
    // What is still open is the host's: the book at the open segment's batch.
    const beforeOpen = objectCalls.market;
    const open = await read(`/api/orderbook/${SYMBOL}?sequence=${SMALL + 8}&depth=5`);
    expect([open.status, open.body.sequence], "a book in the open segment").toEqual([200, SMALL + 8]);
    expect(objectCalls.market - beforeOpen, "the open segment's read is the host's").toBe(1);
  }, 120_000);

  it("a replay and a catch-up through closed history read its pages where they run, none at the host, and rebuild the history's books", async () => {
    const SYMBOL = "BTCUSDC";
    const { market } = await closedSegment(SYMBOL);
    const from = T0 + 1500;
    // To just before the wide batch: the replay ends inside the closed segment (past its end, the open one is the host's to say).
    const to = T0 + (SMALL + 1) * 1000 - 1;
    const end = await callJson<{ checksum: number }>(`/api/orderbook/${SYMBOL}?sequence=${SMALL}`);
    const closedEnd = await callJson<{ checksum: number }>(`/api/orderbook/${SYMBOL}?sequence=${SMALL + 7}`);

    // The replay, through the app in this isolate: its book pages make no call to a market's host.
    const calls = objectCalls.market;
    const response = await app.request(
      `/api/replay?streams=book.${SYMBOL}&from=${from}&to=${to}&speed=0`,
      { headers: { Upgrade: "websocket", "CF-Connecting-IP": "198.51.100.140" } },
      env,
      createExecutionContext(),
    );
    expect(response.status, "the replay's upgrade").toBe(101);
    const ws = response.webSocket!;
    const messages: any[] = [];
    ws.addEventListener("message", (event) => messages.push(JSON.parse(event.data as string)));
    ws.accept();
    let answered = 0;
    await until(
      () => {
        const pauses = messages.filter((m) => m.stream === "replay" && m.data.type === "paused");
        for (const p of pauses.slice(answered)) ws.send(JSON.stringify({ op: "more", token: p.data.token }));
        answered = pauses.length;
        return messages.some((m) => m.data?.type === "replayEnded") || undefined;
      },
      { what: "the replay's end" },
    );
    expect(objectCalls.market - calls, "calls to a market's host for the replay").toBe(0);
    const replayed = messages.filter((m) => m.stream === `book.${SYMBOL}`).map((m) => m.data);
    expect(replayed[0], "the replay opens with the book at from").toMatchObject({ type: "snapshot", sequence: 1 });
    const book = new LocalBook();
    for (const [i, message] of replayed.entries()) expect(book.apply(message), `replayed message ${i}`).toBe("applied");
    expect(replayed.at(-1)?.sequence, "the replay reaches its last batch before to").toBe(SMALL);
    expect(book.checksum(), "the replayed book is the history's").toBe(end.body.checksum);

    // A shard's catch-up pages (bookPage, as the shard calls it) up to a live copy at the segment's end: none at the host.
    const source: PageSource = {
      env,
      closed: closedHistoryOf(env),
      books: new Map([[SYMBOL, { sequence: SMALL + 7 } as WireBook]]),
      recent: undefined as unknown as PageSource["recent"],
      baseOf: async () => {},
    };
    const stream = streamAt(parseStreamName(`book.${SYMBOL}`)!, undefined);
    const caught = new LocalBook();
    const pageCalls = objectCalls.market;
    let pages = 0;
    for (;;) {
      const page = await bookPage(source, from, stream, market);
      if (page.length === 0) break;
      pages += 1;
      for (const pending of page) expect(caught.apply(JSON.parse(pending.text).data), `page ${pages}'s message at ${pending.cursor}`).toBe("applied");
      stream.cursor = page.at(-1)!.cursor;
    }
    expect(objectCalls.market - pageCalls, "calls to a market's host for the catch-up's pages").toBe(0);
    expect(pages, "more than one page (a block each at most)").toBeGreaterThan(1);
    expect(caught.checksum(), "the caught-up book is the history's").toBe(closedEnd.body.checksum);

    // And end to end through a shard, into live.
    const socket = await openSocket(`/api/ws?streams=book.${SYMBOL}&from=${from}`, "198.51.100.141");
    let more = 0;
    await until(
      () => {
        const pauses = socket.messages.filter((m) => m.type === "paused");
        for (const p of pauses.slice(more)) socket.ws.send(JSON.stringify({ op: "more", token: p.token }));
        more = pauses.length;
        return socket.messages.some((m) => m.type === "live" && m.stream === `book.${SYMBOL}`) || undefined;
      },
      { what: "the live mark" },
    );
    const live = socket.messages.filter((m) => m.stream === `book.${SYMBOL}` && m.data).map((m) => m.data);
    const rebuilt = new LocalBook();
    for (const [i, message] of live.entries()) expect(rebuilt.apply(message), `caught-up message ${i}`).toBe("applied");
    expect(live.at(-1)?.sequence, "caught up to the live book").toBe(SMALL + 9);
    const now = await callJson<{ checksum: number }>(`/api/orderbook/${SYMBOL}?sequence=${SMALL + 9}`);
    expect(rebuilt.checksum(), "the caught-up book is the history's").toBe(now.body.checksum);
    socket.ws.close();
  }, 120_000);
});
