import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LocalBook } from "../../client/src/index";
import { principalOfKey } from "../../src/access/keys";
import { publishChannel } from "../../src/core/object-ids";
import { groupOf } from "../../src/domain/market-config";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { IngestBody } from "../../src/market/schemas";
import { seriesKey } from "../../src/metrics/counts";
import type { PublishChannel } from "../../src/publish/publish-channel-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { newPublishKey, signedCall } from "../support/accounts";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openPublisher, openSocket } from "./streams-support";

type Ticking = {
  meter: { holder: { counts: { take(): { counters: Record<string, number> } }; flush(env: Env, now: number, force: boolean): Promise<void> | undefined } };
};
const T0 = Date.now();
const ROWS = 'mds_storage_rows_written_total{object="market"}';

/** A batch of the ETHUSDT feed: delta `sequence` of five levels, and one trade. */
const batch = (sequence: number): IngestBody => ({
  symbol: "ETHUSDT",
  book: {
    type: "delta",
    sequence,
    bids: Array.from({ length: 3 }, (_, i) => [`${3000 - i - 1}.00`, `${1 + ((sequence + i) % 9)}.0000`] as [string, string]),
    asks: Array.from({ length: 2 }, (_, i) => [`${3000 + i + 1}.00`, `${1 + ((sequence + i) % 7)}.0000`] as [string, string]),
  },
  trades: [{ id: `tick-${sequence}`, price: "3000.00", quantity: "0.1000", side: "buy", time: T0 + sequence }],
});

async function setTick(ms: number, symbol = "ETHUSDT"): Promise<void> {
  await runInDurableObject(await hostOf(symbol), async (instance: MarketObject) => {
    instance.tickMs = ms;
  });
}

/** Calls the market hosts took since the last call (the first call starts the count: it hands on what is held). */
async function callsInto(start = false): Promise<number> {
  return runInDurableObject(await hostOf("SOLUSDT"), async (instance: MarketObject) => {
    const { holder } = (instance as unknown as Ticking).meter;
    if (start) await holder.flush(env, Date.now(), true);
    return holder.counts.take().counters[seriesKey("mds_object_requests_total", { object: "market", kind: "call" })] ?? 0;
  });
}

/** Rows the market wrote since the last call (the first call starts the count: it hands on what is held). */
async function rowsWritten(start = false, symbol = "ETHUSDT"): Promise<number> {
  return runInDurableObject(await hostOf(symbol), async (instance: MarketObject) => {
    const { holder } = (instance as unknown as Ticking).meter;
    if (start) await holder.flush(env, Date.now(), true);
    return holder.counts.take().counters[ROWS] ?? 0;
  });
}

describe("the tick: a market writes its batches together, at most once a tick, and answers each once it is written (src/writes/tick.ts)", () => {
  it("40 batches sent together are written in a few commits, not 40 (fails before: 3 rows a batch), and all of them are there after a restart", async () => {
    await ensureRegistry(env);
    await ingest(env, "*", { symbol: "ETHUSDT", book: { type: "snapshot", sequence: 1, bids: [["2999.00", "1.0000"]], asks: [["3001.00", "1.0000"]] } });
    await setTick(100);
    await rowsWritten(true);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => ingest(env, "*", batch(2 + i))));
    for (const [i, answer] of answers.entries()) expect(answer, `batch ${i}`).toMatchObject({ acceptedTrades: 1, book: "applied" });
    const rows = await rowsWritten();
    // A commit: the book's ring row, the trades' block and its index entry (3); the first batch
    // commits at once (a quiet spell), the rest with the ticks after it; the alarm's row, and the
    // record's at most once.
    expect(rows, "rows written by 40 batches sent together").toBeLessThanOrEqual(3 * 4 + 2);
    await evictDurableObject(await hostOf("ETHUSDT"));
    const book = await callJson<{ sequence: number }>("/api/orderbook/ETHUSDT?depth=5");
    expect(book.body.sequence, "the book after a restart").toBe(41);
    const trades = await callJson<unknown[]>("/api/trades/ETHUSDT?limit=100");
    expect(trades.body.length, "the trades after a restart").toBe(40);
    expect(await ingest(env, "*", batch(41)), "the last batch resent").toMatchObject({ acceptedTrades: 0, duplicateTrades: 1, book: "duplicate" });
  });

  it("an object aborted mid-tick answered none of the tick's batches, kept the one it answered, and takes the others when resent", async () => {
    await ensureRegistry(env);
    const market = findMarket("ETHUSDT")!;
    const stub = await hostOf("ETHUSDT");
    const start = ((await callJson<{ sequence: number }>("/api/orderbook/ETHUSDT?depth=1")).body.sequence ?? 0) + 1;
    // A tick of a minute, begun by the last commit: all five batches wait for it.
    await setTick(60_000);
    // The host's alarm commits what waits (a candle's close, the minute's end): held until the
    // abort, and made due now, so the window it fell into once in five CI runs is always there.
    await runInDurableObject(stub, async (instance: MarketObject, state) => {
      instance.alarm = () => new Promise<void>(() => undefined);
      await state.storage.setAlarm(Date.now());
    });
    const sent = Array.from({ length: 5 }, (_, i) =>
      ingest(env, "*", batch(start + i)).then(
        (answer) => ({ answered: true as const, answer }),
        (error: unknown) => ({ answered: false as const, error: String(error) }),
      ),
    );
    // Once the five are staged (the book shows the last), the object is aborted before its tick.
    for (let tries = 0; tries < 200; tries++) {
      const staged = await runInDurableObject(stub, async (instance: MarketObject) => instance.orderBook(market, 1));
      if ("sequence" in staged && staged.sequence === start + 4) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await runInDurableObject(stub, async (_instance: MarketObject, state) => {
      state.abort("the runtime failed mid-tick");
    }).catch(() => undefined);
    const outcomes = await Promise.all(sent);
    expect(
      outcomes.filter((o) => o.answered),
      "batches answered before the abort",
    ).toHaveLength(0);
    const book = await callJson<{ sequence: number }>("/api/orderbook/ETHUSDT?depth=1");
    expect(book.body.sequence, "the book after the abort: what was acknowledged").toBe(start - 1);
    await setTick(0);
    for (let i = 0; i < 5; i++) {
      expect(await ingest(env, "*", batch(start + i)), `batch ${start + i} resent`).toMatchObject({ acceptedTrades: 1, book: "applied" });
    }
  });

  it("the publisher channel sends a market's batches on without waiting for their answers, so a burst shares ticks (fails before: a commit a batch), in order", async () => {
    await ensureRegistry(env);
    const key = await newPublishKey();
    const socket = await openPublisher(key, "203.0.131.7");
    const solBatch = (sequence: number) => ({
      id: sequence,
      symbol: "SOLUSDT",
      book:
        sequence === 1
          ? { type: "snapshot", sequence, bids: [["149.000", "5.00"]], asks: [["151.000", "5.00"]] }
          : { type: "delta", sequence, bids: [["149.000", `${sequence}.00`]], asks: [] },
      trades: [{ id: `pipe-${sequence}`, price: "150.000", quantity: "1.00", side: "buy", time: T0 + sequence }],
    });
    socket.ws.send(JSON.stringify(solBatch(1)));
    await until(() => socket.messages.find((m) => m.id === 1), { what: "the snapshot's answer" });
    await setTick(100, "SOLUSDT");
    await rowsWritten(true, "SOLUSDT");
    for (let sequence = 2; sequence <= 31; sequence++) socket.ws.send(JSON.stringify(solBatch(sequence)));
    await until(() => socket.messages.find((m) => m.id === 31), { what: "the last answer" });
    const answers = socket.messages.filter((m) => typeof m.id === "number" && m.id >= 2);
    expect(
      answers.map((m) => m.result?.sequence),
      "every batch applied, in order",
    ).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));
    const rows = await rowsWritten(false, "SOLUSDT");
    expect(rows, "rows written by a burst of 30 batches on the channel").toBeLessThanOrEqual(10);
    socket.ws.close();
  });

  it("the channel gathers a group's batches into a few calls, not a call a batch (fails before: 15 calls for 15 batches), each answered", async () => {
    await ensureRegistry(env);
    const key = await newPublishKey();
    const socket = await openPublisher(key, "203.0.131.9");
    // A gathering longer than the burst takes to arrive: the count does not hang on the machine's speed.
    await runInDurableObject(publishChannel(env, principalOfKey(key.id)), async (instance: PublishChannel) => {
      instance.gatherMs = 1_000;
    });
    const markets = [
      { symbol: "SOLUSDT", price: "150.000", quantity: "1.00" },
      { symbol: "ETHUSDT", price: "3000.00", quantity: "0.1000" },
      { symbol: "BTCUSDC", price: "97000.00", quantity: "0.01000" },
    ];
    expect(new Set(markets.map((m) => groupOf(findMarket(m.symbol)!))).size, "one group").toBe(1);
    await callsInto(true);
    let id = 100;
    for (let n = 0; n < 5; n++)
      for (const m of markets)
        socket.ws.send(
          JSON.stringify({
            id: id++,
            symbol: m.symbol,
            trades: [{ id: `gather-${m.symbol}-${n}`, price: m.price, quantity: m.quantity, side: "buy", time: T0 + 1_000 + n }],
          }),
        );
    await until(() => socket.messages.filter((m) => typeof m.id === "number" && m.id >= 100).length === 15, { what: "15 answers" });
    const answers = socket.messages.filter((m) => typeof m.id === "number" && m.id >= 100);
    expect(
      answers.map((m) => m.result?.acceptedTrades),
      "each batch answered: its trade taken",
    ).toEqual(Array.from({ length: 15 }, () => 1));
    expect(await callsInto(), "calls into the group's host for 15 batches").toBeLessThanOrEqual(2);
    for (const m of markets) {
      const trades = await callJson<{ id: string }[]>(`/api/trades/${m.symbol}?limit=5`);
      expect(trades.body.map((t) => t.id).sort(), `${m.symbol}'s newest trades`).toEqual(Array.from({ length: 5 }, (_, n) => `gather-${m.symbol}-${n}`));
    }
    socket.ws.close();
  });

  it("a tick's row stays within Cloudflare's 2 MB a value: 30 batches of 1,000 trades sent together are written in several commits (fails before: one row of about 2.4 MB)", async () => {
    await ensureRegistry(env);
    await setTick(100, "XRPUSDT");
    const batches = Array.from({ length: 30 }, (_, b) => ({
      symbol: "XRPUSDT",
      trades: Array.from({ length: 1_000 }, (_, i) => ({
        id: `big-${b}-${i}-${"x".repeat(20)}`,
        price: "0.6000",
        quantity: "10.0",
        side: "buy" as const,
        time: T0 - 40_000 + b * 1_000 + i,
      })),
    }));
    const answers = await Promise.all(batches.map((body) => ingest(env, "*", body)));
    expect(
      answers.reduce((sum, a) => sum + a.acceptedTrades, 0),
      "trades taken",
    ).toBe(30_000);
    const largest = await runInDurableObject(
      await hostOf("XRPUSDT"),
      async (_instance: MarketObject, state) =>
        state.storage.sql.exec<{ bytes: number | null }>("SELECT max(length(body)) AS bytes FROM journal").one().bytes ?? 0,
    );
    expect(largest, "the largest commit row (bytes)").toBeLessThanOrEqual(1_500_000);
    expect(largest, "the largest commit row (bytes)").toBeGreaterThan(0);
    const trades = await callJson<unknown[]>("/api/trades/XRPUSDT?limit=1000");
    expect(trades.body.length, "the latest trades read back").toBe(1_000);
  });

  it("POST /v1/ingest is written at once, not with a tick its one batch would be alone in (fails before: it waited for the tick, here a minute)", async () => {
    await ensureRegistry(env);
    const publisher = await newPublishKey();
    const body = (n: number) =>
      JSON.stringify({ symbol: "BTCUSDC", trades: [{ id: `post-${n}`, price: "97000.00", quantity: "0.01000", side: "buy", time: T0 }] });
    expect((await signedCall(publisher, "POST", "/v1/ingest", { body: body(0) })).status, "a first batch").toBe(200);
    await setTick(60_000, "BTCUSDC");
    // A tick of a minute began with the first batch's commit: a batch waiting for it would hang the test.
    const answered = await Promise.race([
      signedCall(publisher, "POST", "/v1/ingest", { body: body(1) }).then((response) => response.status),
      new Promise((resolve) => setTimeout(() => resolve("still waiting after 5 s"), 5_000)),
    ]);
    expect(answered, "the second batch's answer").toBe(200);
    await setTick(0, "BTCUSDC");
  });

  it("a subscriber's book follows a burst that shares ticks, every delta's checksum its own book (fails before: streamed at the commit, the checksums were of a book ahead of them)", async () => {
    await ensureRegistry(env);
    const symbol = "ETHBTC";
    const level = (n: number) => `0.0${String(3000 + n).padStart(4, "0")}`;
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: [[level(0), "1.0000"]], asks: [["0.05000", "1.0000"]] } });
    const socket = await openSocket(`/api/ws?streams=book.${symbol}`, "203.0.131.9");
    const book = new LocalBook();
    const outcomes: string[] = [];
    const apply = (message: { stream?: string; data?: unknown }) => {
      if (message.stream === `book.${symbol}`) outcomes.push(book.apply(message.data as Parameters<LocalBook["apply"]>[0]));
    };
    for (const message of socket.messages) apply(message);
    socket.ws.addEventListener("message", (event) => apply(JSON.parse(event.data as string)));
    await until(() => book.synced, { what: "the subscriber's snapshot" });
    await setTick(100, symbol);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        ingest(env, "*", { symbol, book: { type: "delta", sequence: 2 + i, bids: [[level(1 + (i % 9)), `${1 + i}.0000`]], asks: [] } }),
      ),
    );
    await until(() => book.synced && book.sequence === 41, { what: "the subscriber's book at the last sequence" });
    expect(
      outcomes.filter((o) => o !== "applied"),
      "deltas the subscriber's book refused (a checksum or a sequence that does not follow)",
    ).toEqual([]);
    socket.ws.close();
    await setTick(0, symbol);
  });
});
