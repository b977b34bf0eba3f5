import { evictDurableObject, introspectWorkflowInstance, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LocalBook } from "../../client/src/local-book";
import { HOUR_MS } from "../../src/domain/intervals";
import { BOOK_FILES_AFTER_MS, hourlyKey, hourOf } from "../../src/history/book-files";
import { type BookHourOutput, bookHourId } from "../../src/history/book-files-workflow";
import { ingest } from "../../src/market/ingest";
import { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { atScale, wideUpdate } from "../support/book-levels";
import { evictWhenIdle } from "../support/evict";
import { call, callJson } from "../support/http";
import { hostOf } from "../support/registry";
import { unzip } from "../support/zip";
import { openSocket } from "./streams-support";

type Level = [string, string];
type Uploads = { bookHistory: { upload(symbol: string): Promise<number> } };
interface Book {
  sequence: number;
  time: number;
  checksum: number;
  bids: Level[];
  asks: Level[];
}

/** The book the publisher built, side by side with what it sends: levels by price text, sorted when read. */
class ModelBook {
  readonly bids = new Map<string, string>();
  readonly asks = new Map<string, string>();
  apply(update: { type: string; bids: Level[]; asks: Level[] }) {
    if (update.type === "snapshot") {
      this.bids.clear();
      this.asks.clear();
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of update[side]) {
        if (Number(quantity) === 0) this[side].delete(price);
        else this[side].set(price, quantity);
      }
    }
  }
  levels(): { bids: Level[]; asks: Level[] } {
    const sorted = (side: "bids" | "asks") => [...this[side]].sort((a, b) => (side === "bids" ? Number(b[0]) - Number(a[0]) : Number(a[0]) - Number(b[0])));
    return { bids: sorted("bids"), asks: sorted("asks") };
  }
}

const hex = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("book history (docs/history.md#book-history)", () => {
  it("every sequence and moment answers the book the publisher built; files and a replay rebuild the same books", async () => {
    await ensureRegistry(env);
    const symbol = "ETHBTC";
    const market = findMarket(symbol)!;
    const price = (units: number) => atScale(units, market.priceScale);
    const quantity = (units: number) => atScale(units, market.quantityScale);
    const model = new ModelBook();
    const built = new Map<number, { bids: Level[]; asks: Level[] }>();
    let sequence = 0;
    // Wide batches (about 5 KB each), so segments close on their bytes and go to R2 within the run.
    const side = fc.array(fc.tuple(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 9_999 })), { minLength: 40, maxLength: 160 });
    const batches = fc.sample(fc.tuple(side, side, fc.boolean(), fc.integer({ min: 1, max: 3 })), { numRuns: 1_300, seed: 45 });
    const first = {
      type: "snapshot" as const,
      sequence: ++sequence,
      bids: [[price(4_000), quantity(1_000)]] as Level[],
      asks: [[price(6_000), quantity(1_000)]] as Level[],
    };
    await ingest(env, "*", { symbol, book: first });
    model.apply(first);
    built.set(sequence, model.levels());
    for (const [bids, asks, snapshot, parts] of batches) {
      const updates = [];
      for (let part = 0; part < parts; part++) {
        const levels = (entries: [number, number][], base: number, step: number): Level[] => [
          ...new Map(
            entries
              .slice(part * 40, part * 40 + 60)
              .map(([offset, q]) => [price(base + step * offset), snapshot && q === 0 ? quantity(1) : q === 0 ? "0" : quantity(q)]),
          ),
        ];
        const type = snapshot && part === 0 ? ("snapshot" as const) : ("delta" as const);
        const update = { type, sequence: ++sequence, bids: levels(bids, 4_999, -1), asks: levels(asks, 5_001, 1) };
        updates.push(update);
        model.apply(update);
        built.set(sequence, model.levels());
      }
      const result = await ingest(env, "*", { symbol, book: updates });
      expect(result.book, `batch ending at ${sequence}`).toBe("applied");
    }
    const object = await hostOf(symbol);
    // The uploads run beside the ingest: waited for here.
    await runInDurableObject(object, (instance: MarketObject) => (instance.engine(symbol) as unknown as Uploads).bookHistory.upload(symbol));
    const kept = await env.HISTORY.list({ prefix: `book-history/${symbol}/` });
    expect(kept.objects.length, "segments closed and put in R2 while the batches came").toBeGreaterThanOrEqual(2);
    await evictDurableObject(object);

    // Every 13th sequence, the first and the last: the book exactly as the publisher built it there.
    const sampled = [...built.keys()].filter((n) => n % 13 === 0 || n === 1 || n === sequence);
    const answers = new Map<number, Book>();
    for (const n of sampled) {
      const { status, body } = await callJson<Book>(`/api/orderbook/${symbol}?sequence=${n}&depth=1000`);
      expect(status, `?sequence=${n}`).toBe(200);
      expect({ sequence: body.sequence, bids: body.bids, asks: body.asks }, `the book at ${n}`).toEqual({ sequence: n, ...built.get(n)! });
      answers.set(n, body);
    }
    // A moment: the book after the last batch applied at or before it.
    for (const n of sampled.filter((_, i) => i % 4 === 0)) {
      const { time } = answers.get(n)!;
      const { body } = await callJson<Book>(`/api/orderbook/${symbol}?at=${time}&depth=1000`);
      expect(body.time, `?at=${time}`).toBe(time);
      expect(body.sequence, `?at=${time}: the last update of that moment`).toBeGreaterThanOrEqual(n);
      expect({ bids: body.bids, asks: body.asks }, `?at=${time}`).toEqual(built.get(body.sequence)!);
    }
    const cached = await call(`/api/orderbook/${symbol}?sequence=${sampled[1]}&depth=1000`);
    expect([cached.headers.get("X-Book-Cache"), cached.headers.get("Cache-Control")], "asked again: from the location's cache, immutable").toEqual([
      "hit",
      "public, max-age=31536000, immutable",
    ]);
    await cached.arrayBuffer();
    const future = await callJson<{ code: string }>(`/api/orderbook/${symbol}?sequence=${sequence + 1}`);
    expect([future.status, future.body.code], "a sequence not reached yet").toEqual([404, "NOT_FOUND"]);
    const both = await callJson<{ code: string }>(`/api/orderbook/${symbol}?sequence=1&at=1`);
    expect([both.status, both.body.code]).toEqual([400, "VALIDATION_FAILED"]);

    // A replay at speed 0 rebuilds, message by message, the books the publisher built.
    const from = answers.get(1)!.time;
    const to = answers.get(sequence)!.time;
    const replay = await openSocket(`/api/replay?streams=book.${symbol}&from=${from}&to=${to}&speed=0`, "10.45.0.1");
    const { code } = await replay.closed;
    expect(code, "the replay closes normally at its end").toBe(1000);
    const last = replay.messages[replay.messages.length - 1];
    expect(last.data.type, "the last message").toBe("replayEnded");
    const local = new LocalBook();
    let checked = 0;
    for (const message of replay.messages.slice(0, -1)) {
      expect(local.apply(message.data), `message at ${message.data.sequence}`).not.toBe("gap");
      expect({ bids: local.bids(), asks: local.asks() }, `the replayed book at ${message.data.sequence}`).toEqual(built.get(local.sequence));
      checked += 1;
    }
    expect(local.sequence, "the replay reaches the last sequence").toBe(sequence);
    expect(checked, "messages replayed").toBeGreaterThan(1);

    // The hour's files, written once the hour is over: replayed from their snapshot, the book REST shows at the hour's last sequence.
    // The host hands the hour to the Workflow that builds its files; the files are the instance's.
    const hour = hourOf(to);
    const instance = await introspectWorkflowInstance(env.BOOK_FILES, bookHourId(symbol, hour));
    const handed = await runInDurableObject(object, (host: MarketObject) => host.closeBookHours(symbol, hour + HOUR_MS + BOOK_FILES_AFTER_MS + 1_000));
    expect(handed, "the hour was handed to its Workflow").toContain(hour);
    await instance.waitForStatus("complete");
    const output = (await instance.getOutput()) as BookHourOutput;
    expect(output.written, "the instance wrote the hour's files").toBe(true);
    await instance.dispose();
    const key = hourlyKey("book", symbol, hour);
    const name = key.slice(key.lastIndexOf("/") + 1);
    const zip = new Uint8Array(await (await call(`/${key}`)).arrayBuffer());
    const checksum = await (await call(`/${key}.CHECKSUM`)).text();
    expect(checksum, "sha256sum -c's line").toBe(`${await hex(zip)}  ${name}\n`);
    const rows = (await unzip(zip)).text
      .trimEnd()
      .split("\n")
      .map((line) => line.split(","));
    const file = new ModelBook();
    let snapshotAt = -1;
    for (const [seq, , sideName, p, q, type] of rows) {
      if (type === "snapshot" && Number(seq) !== snapshotAt) {
        file.bids.clear();
        file.asks.clear();
        snapshotAt = Number(seq);
      }
      file[sideName === "bid" ? "bids" : "asks"].set(p!, q!);
      if (Number(q) === 0) file[sideName === "bid" ? "bids" : "asks"].delete(p!);
    }
    const lastSeq = Number(rows[rows.length - 1]![0]);
    const rest = await callJson<Book>(`/api/orderbook/${symbol}?sequence=${lastSeq}&depth=1000`);
    expect(file.levels(), "the file, replayed, ends at REST's book at the hour's last sequence").toEqual({ bids: rest.body.bids, asks: rest.body.asks });
    const again = await runInDurableObject(object, (host: MarketObject) => host.closeBookHours(symbol, hour + 2 * HOUR_MS + BOOK_FILES_AFTER_MS + 1_000));
    expect(again, "an hour is handed on once").not.toContain(hour);
    const pieces = await env.HISTORY.list({ prefix: `book-files-work/${symbol}/` });
    expect(pieces.objects.length, "the pieces are gone once the zips are put").toBe(0);
  }, 120_000);

  it("a segment closed by a big batch is kept in parts within the platform's 2 MB a value, and reads back (before: one value of its whole size, which Cloudflare refuses: the batch, and every one after it, would fail)", async () => {
    await ensureRegistry(env);
    const symbol = "XRPUSDT";
    const market = findMarket(symbol)!;
    // Every level of both sides at one quantity per update: the book at any sequence is known.
    const update = (sequence: number, type: "snapshot" | "delta") => wideUpdate(market, sequence, type);
    let sequence = 0;
    // Five batches of one update of 10,000 levels (about 850 KB logged), then one of seven: it closes a segment of about 2.2 MB.
    for (let b = 0; b < 5; b++) expect((await ingest(env, "*", { symbol, book: [update(++sequence, b === 0 ? "snapshot" : "delta")] })).book).toBe("applied");
    const big = Array.from({ length: 7 }, () => update(++sequence, "delta"));
    expect((await ingest(env, "*", { symbol, book: big })).book, "the batch that closes the segment").toBe("applied");
    const object = await hostOf(symbol);
    const kept = await runInDurableObject(
      object,
      (_: MarketObject, state) =>
        state.storage.sql.exec<{ bytes: number }>(`SELECT max(bytes) AS bytes FROM ${tablePrefixOf(symbol)}book_segments`).one().bytes,
    );
    expect(kept, "the kept segment's bytes").toBeGreaterThan(2_000_000);
    // workerd takes bigger values than Cloudflare does (2 MB a string or row): the parts are checked here.
    const parts = await runInDurableObject(object, (_: MarketObject, state) =>
      state.storage.sql
        .exec<{ longest: number; parts: number }>(`SELECT max(length(text)) AS longest, count(*) AS parts FROM ${tablePrefixOf(symbol)}book_segment_text`)
        .one(),
    );
    expect(parts.longest, "the longest value it left in SQLite, within the platform's 2 MB").toBeLessThanOrEqual(1_000_000);
    expect(parts.parts, "parts while it waits for R2").toBeGreaterThanOrEqual(3);
    for (const n of [1, 3, 5, 8, sequence]) {
      const { status, body } = await callJson<Book>(`/api/orderbook/${symbol}?sequence=${n}&depth=1000`);
      expect([status, body.sequence, body.bids[0]![1], body.asks[999]![1]], `?sequence=${n} while the segment waits for R2`).toEqual([
        200,
        n,
        atScale(1_000 + n, market.quantityScale),
        atScale(2_000 + n, market.quantityScale),
      ]);
    }
    await runInDurableObject(object, (instance: MarketObject) => (instance.engine(symbol) as unknown as Uploads).bookHistory.upload(symbol));
    await evictWhenIdle(object);
    const { body } = await callJson<Book>(`/api/orderbook/${symbol}?sequence=3&depth=5`);
    expect([body.sequence, body.bids[0]![1]], "?sequence=3 from R2").toEqual([3, atScale(1_003, market.quantityScale)]);
  }, 60_000);

  it("a replay is one of the client address's five connections: with five open, it is refused before the upgrade (docs/limits.md#stream-connections)", async () => {
    await ensureRegistry(env);
    const symbol = "SOLBTC";
    const market = findMarket(symbol)!;
    await ingest(env, "*", {
      symbol,
      book: { type: "snapshot", sequence: 1, bids: [[atScale(2_000, market.priceScale), "1"]], asks: [[atScale(3_000, market.priceScale), "1"]] },
    });
    const ip = "10.45.0.9";
    const path = `/api/replay?streams=book.${symbol}&from=${Date.now() - 60_000}&to=${Date.now() + 1_000}&speed=0`;
    const open = [];
    for (let i = 0; i < 5; i++) open.push(await openSocket("/api/ws?streams=heartbeat", ip));
    // Its pages are not read for a refused replay: an address at its limit makes the host do nothing.
    const prototype = MarketObject.prototype as unknown as { bookReplay: (...args: unknown[]) => unknown };
    const original = prototype.bookReplay;
    let reads = 0;
    prototype.bookReplay = function (...args: unknown[]) {
      reads += 1;
      return original.apply(this, args);
    };
    const refused = await callJson<{ code: string }>(path, { ip, headers: { Upgrade: "websocket" } }).finally(() => {
      prototype.bookReplay = original;
    });
    expect([refused.status, refused.body.code], "a sixth connection, as a replay").toEqual([429, "STREAM_LIMIT"]);
    expect(reads, "book pages read for the refused replay (fails before: its first pages were read first)").toBe(0);
    open[0]!.ws.close();
    await open[0]!.closed;
    const replay = await openSocket(path, ip);
    expect((await replay.closed).code, "with a connection free, the replay runs to its end").toBe(1000);
    expect(replay.messages.at(-1)?.data.type).toBe("replayEnded");
    for (const socket of open.slice(1)) socket.ws.close();
  });
});
