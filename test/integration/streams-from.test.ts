import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BookMessage, LocalBook } from "../../client/src/index";
import { unwrap } from "../../src/core/problem";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { CATCH_UP_WINDOW_BYTES } from "../../src/streams/catch-up";
import { callJson } from "../support/http";
import { ingestTrades } from "../support/market-batches";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openSocket, shardOfConnection, type TestSocket, upgrade } from "./streams-support";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const bookOf = (socket: TestSocket, stream: string) =>
  socket.messages.filter((m) => m.stream === stream && m.type !== "live").map((m) => m.data as BookMessage);
const tradeIdsOf = (socket: TestSocket, stream: string) =>
  socket.messages.filter((m) => m.stream === stream && m.type !== "live").flatMap((m) => (m.data as { tradeId: number }[]).map((t) => t.tradeId));
const liveMark = (socket: TestSocket, stream: string) => socket.messages.find((m) => m.type === "live" && m.stream === stream);

/** A market of its own per test: a book moved at one level, a trade with each change. */
function feed(symbol: string, price: string, quantity: string) {
  let sequence = 0;
  return {
    get sequence() {
      return sequence;
    },
    snapshot: (levels = 1) =>
      ingest(env, "*", {
        symbol,
        book: {
          type: "snapshot",
          sequence: ++sequence,
          bids: Array.from({ length: levels }, (_, i) => [(Number(price) - i).toFixed(2), "1.0000"] as [string, string]),
          asks: Array.from({ length: levels }, (_, i) => [(Number(price) + 10 + i).toFixed(2), "1.0000"] as [string, string]),
        },
      }),
    change: (amount: string) =>
      ingest(env, "*", {
        symbol,
        book: { type: "delta", sequence: ++sequence, bids: [[price, amount]], asks: [] },
        trades: [{ id: `${symbol}-${sequence}`, price, quantity, side: "buy", time: Date.now() }],
      }),
  };
}

describe("a subscription from any moment into live (docs/streams.md#from-any-moment)", () => {
  it("the book at `from`, every change and trade since, the live mark, then live: equal to the book history at every sequence, nothing missed or repeated", async () => {
    const market = feed("ETHUSDT", "3000.00", "0.1000");
    await market.snapshot();
    for (const amount of ["2.0000", "3.0000", "4.0000"]) await market.change(amount);
    await pause(5);
    const from = Date.now();
    const atFrom = market.sequence;
    await pause(5);
    for (const amount of ["5.0000", "6.0000", "7.0000", "8.0000", "9.0000"]) {
      await market.change(amount);
      await pause(2);
    }

    const socket = await openSocket(`/api/ws?streams=book.ETHUSDT,trades.ETHUSDT&from=${from}`, "198.51.100.120");
    await until(() => liveMark(socket, "book.ETHUSDT") && liveMark(socket, "trades.ETHUSDT"), { what: "both live marks" });
    expect(socket.messages[0], "the connect's ack says what catches up").toEqual({
      id: null,
      result: { streams: ["book.ETHUSDT", "trades.ETHUSDT"], from, catchingUp: ["book.ETHUSDT", "trades.ETHUSDT"], startsNow: [] },
    });
    for (const amount of ["10.0000", "11.0000", "12.0000"]) await market.change(amount);
    await until(() => bookOf(socket, "book.ETHUSDT").at(-1)?.sequence === market.sequence, { what: "the live changes" });

    const messages = bookOf(socket, "book.ETHUSDT");
    expect(messages[0], "the book as it stood at `from`").toMatchObject({ type: "snapshot", sequence: atFrom });
    const book = new LocalBook();
    for (const [i, message] of messages.entries()) {
      if (i > 0) expect(message.firstSequence, `message ${i} continues the one before`).toBe(messages[i - 1]!.sequence + 1);
      expect(book.apply(message), `message ${i} (${message.firstSequence}…${message.sequence})`).toBe("applied");
      const history = await callJson<{ checksum: number }>(`/api/orderbook/ETHUSDT?sequence=${message.sequence}`);
      expect(book.checksum(), `the book at sequence ${message.sequence} is the history's`).toBe(history.body.checksum);
    }
    const mark = liveMark(socket, "book.ETHUSDT");
    const markAt = socket.messages.indexOf(mark);
    const before = socket.messages.slice(0, markAt).filter((m) => m.stream === "book.ETHUSDT");
    const after = socket.messages.slice(markAt + 1).filter((m) => m.stream === "book.ETHUSDT");
    expect(mark.sequence, "the mark names the last sequence before it").toBe(before.at(-1)!.data.sequence);
    expect(after[0]?.data.firstSequence, "the first live message continues it").toBe(mark.sequence + 1);

    await until(() => tradeIdsOf(socket, "trades.ETHUSDT").at(-1) === market.sequence - 1, { what: "the live trades" });
    const ids = tradeIdsOf(socket, "trades.ETHUSDT");
    // One trade per change: trade id n came with sequence n + 1; the first after `from` is the change after atFrom.
    expect(ids, "every trade since `from` once, in order, across the mark").toEqual(Array.from({ length: market.sequence - atFrom }, (_, i) => atFrom + i));
    socket.ws.close();
  });

  it("a client that does not ask for more gets one window and a pause; `more` brings the rest and the live mark, after the shard hibernated too", async () => {
    const market = feed("BTCUSDT", "90000.00", "0.01000");
    // A book of 3,000 levels a side: each snapshot is about 150 KB of text, two of them more than a window.
    await market.snapshot(3_000);
    await pause(5);
    const from = Date.now();
    await pause(5);
    await market.change("2.0000");
    await market.snapshot(3_000);
    await market.change("3.0000");

    const socket = await openSocket("/api/ws", "198.51.100.121");
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["book.BTCUSDT"], from }));
    await until(() => socket.messages.some((m) => m.type === "paused"), { what: "the pause" });
    await pause(50);
    const paused = socket.messages.findIndex((m) => m.type === "paused");
    expect(socket.messages.length, "nothing after the pause until the client asks").toBe(paused + 1);
    const sent = socket.messages.slice(1, paused).reduce((n, m) => n + JSON.stringify(m).length, 0);
    expect(sent, "a window, and at most the message that crossed it").toBeGreaterThanOrEqual(CATCH_UP_WINDOW_BYTES);
    expect(socket.messages[paused]).toMatchObject({ type: "paused", streams: ["book.BTCUSDT"] });
    expect(liveMark(socket, "book.BTCUSDT"), "not live yet").toBeUndefined();
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 2, streams: ["trades.BTCUSDT"], from }));
    await until(() => socket.messages.length > paused + 1, { what: "the second subscribe's answer" });
    expect(socket.messages[paused + 1], "one catch-up at a time").toMatchObject({ id: 2, error: { code: "CATCH_UP_LIMIT" } });

    // Credit is earned by reading: a `more` without the pause's token, or with another, brings nothing.
    const { token } = socket.messages[paused] as { token: string };
    expect(token, "the pause's token").toMatch(/^[0-9a-f]{16}$/);
    socket.ws.send(JSON.stringify({ op: "more", id: "blind" }));
    socket.ws.send(JSON.stringify({ op: "more", id: "guess", token: "0".repeat(16) }));
    const refused = await until(() => (socket.messages.some((m) => m.id === "guess") ? socket.messages.slice(paused + 2) : undefined), {
      what: "the answers to the blind and guessed mores",
    });
    expect(
      refused.map((m) => [m.id, m.error?.code]),
      "a more that did not read the pause is refused, and nothing is sent for it (fails before: each brought a window)",
    ).toEqual([
      ["blind", "INVALID_MESSAGE"],
      ["guess", "INVALID_MESSAGE"],
    ]);

    // The shard hibernates meanwhile (its memory gone, the socket kept): the catch-up goes on from its attachment.
    await evictDurableObject(env.STREAM_HUB.getByName(await shardOfConnection("ip:198.51.100.121")));
    socket.ws.send(JSON.stringify({ op: "more", token }));
    await until(() => liveMark(socket, "book.BTCUSDT"), { what: "the live mark" });
    expect(socket.messages.filter((m) => m.type === "paused").length, "the rest fits the second window").toBe(1);
    const book = new LocalBook();
    for (const message of bookOf(socket, "book.BTCUSDT")) expect(book.apply(message)).toBe("applied");
    const rest = (await callJson<{ sequence: number; checksum: number }>("/api/orderbook/BTCUSDT?depth=25")).body;
    expect([book.sequence, book.checksum()]).toEqual([rest.sequence, rest.checksum]);
    socket.ws.close();
  });

  it("trades published while nobody on the shard took them are caught up too: the shard keeps no stale last trade id (fails before)", async () => {
    const ip = "198.51.100.124";
    const market = feed("BTCUSDC", "90000.00", "0.01000");
    await market.snapshot();
    const from = Date.now();
    await pause(2);
    const watcher = await openSocket("/api/ws?streams=book.BTCUSDC,trades.BTCUSDC", ip);
    await until(() => bookOf(watcher, "book.BTCUSDC").length > 0, { what: "the watcher's snapshot" });
    await market.change("2.00000");
    await until(() => tradeIdsOf(watcher, "trades.BTCUSDC").length === 1, { what: "the first trade on the shard" });
    // The watcher keeps the market's book here but stops taking its trades: two trades go by unkept.
    watcher.ws.send(JSON.stringify({ op: "unsubscribe", id: 2, streams: ["trades.BTCUSDC"] }));
    await until(() => watcher.messages.some((m) => m.id === 2), { what: "the unsubscribe" });
    for (const amount of ["3.00000", "4.00000"]) await market.change(amount);
    await until(() => bookOf(watcher, "book.BTCUSDC").at(-1)?.sequence === market.sequence, { what: "the changes on the shard" });

    const socket = await openSocket(`/api/ws?streams=trades.BTCUSDC&from=${from}`, ip);
    await until(() => liveMark(socket, "trades.BTCUSDC"), { what: "the live mark" });
    expect(tradeIdsOf(socket, "trades.BTCUSDC"), "every trade since from").toEqual([1, 2, 3]);
    await market.change("5.00000");
    await until(() => tradeIdsOf(socket, "trades.BTCUSDC").length === 4, { what: "the live trade" });
    expect(tradeIdsOf(socket, "trades.BTCUSDC")).toEqual([1, 2, 3, 4]);
    for (const s of [watcher, socket]) s.ws.close();
  });

  it("more trades since `from` than a page holds all arrive, once and in order: the first page runs forward from `from`, not back from the live mark (fails before)", async () => {
    const symbol = "SOLUSDT";
    const ip = "198.51.100.125";
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: [["100.00", "1.0"]], asks: [["101.00", "1.0"]] } });
    const before = Array.from({ length: 40 }, (_, i) => ({ id: `old-${i}`, price: "100.00", quantity: "0.10", side: "buy" as const, time: Date.now() }));
    await ingest(env, "*", { symbol, trades: before });
    await pause(5);
    const from = Date.now();
    await pause(2);
    // Three batches of 900 trades since `from`: 2,700, more than two pages of the catch-up's reads.
    await ingestTrades(symbol, 3, 900, { prefix: "new", price: "100.00", quantity: "0.10", side: "sell" });
    // A live trade on the shard, so the catch-up has a live mark to meet.
    const watcher = await openSocket(`/api/ws?streams=trades.${symbol}`, ip);
    await ingest(env, "*", { symbol, trades: [{ id: "live-0", price: "100.00", quantity: "0.10", side: "buy", time: Date.now() }] });
    await until(() => tradeIdsOf(watcher, `trades.${symbol}`).length === 1, { what: "the live trade on the shard" });
    const lastId = tradeIdsOf(watcher, `trades.${symbol}`)[0]!;

    const socket = await openSocket(`/api/ws?streams=trades.${symbol}&from=${from}`, ip);
    for (let asks = 0; !liveMark(socket, `trades.${symbol}`) && asks < 40; asks++) {
      await until(() => liveMark(socket, `trades.${symbol}`) || socket.messages.filter((m) => m.type === "paused").length > asks, { what: `window ${asks}` });
      if (!liveMark(socket, `trades.${symbol}`))
        socket.ws.send(JSON.stringify({ op: "more", token: socket.messages.findLast((m) => m.type === "paused").token }));
    }
    expect(liveMark(socket, `trades.${symbol}`), "the catch-up reached live").toBeDefined();
    const ids = tradeIdsOf(socket, `trades.${symbol}`);
    const expected = Array.from({ length: 2_701 }, (_, i) => lastId - 2_700 + i);
    expect(ids.length, "every trade since `from` through the live mark, none missing").toBe(expected.length);
    expect(ids, "once each, in order").toEqual(expected);
    for (const s of [watcher, socket]) s.ws.close();
  });

  it("trades streamed while their commit waits are caught up once it lands, never skipped: the catch-up waits for history to reach the live mark (fails before: it went live past them, untold)", async () => {
    const symbol = "ETHBTC";
    const ip = "198.51.100.126";
    const trade = (id: string) => ({ symbol, trades: [{ id, price: "0.03500", quantity: "1.0000", side: "buy" as const, time: Date.now() }] });
    const host = await hostOf(symbol);
    const from = Date.now();
    await pause(2);
    await ingest(env, "*", trade("wait-1"));
    // The next two wait for a tick only the test ends: the first staged before anyone on the shard
    // takes the market's trades, the second streamed to a watcher — the shard's recent trades do not
    // reach back to the first.
    await runInDurableObject(host, (instance: MarketObject) => {
      instance.tickMs = 600_000;
    });
    const staged = [ingest(env, "*", trade("wait-2"))];
    await until(() => runInDurableObject(host, (instance: MarketObject) => instance.writer.staged), {
      what: "the second trade staged",
    });
    const watcher = await openSocket(`/api/ws?streams=trades.${symbol}`, ip);
    await pause(20);
    staged.push(ingest(env, "*", trade("wait-3")));
    await until(() => tradeIdsOf(watcher, `trades.${symbol}`).length === 1, { what: "the third trade on the shard" });
    const lastId = tradeIdsOf(watcher, `trades.${symbol}`)[0]!;

    const socket = await openSocket(`/api/ws?streams=trades.${symbol}&from=${from}`, ip);
    // The catch-up reads the first trade, then finds nothing more while the live mark is two ahead.
    await until(() => tradeIdsOf(socket, `trades.${symbol}`).length === 1, { what: "the committed trade" });
    await until(() => liveMark(socket, `trades.${symbol}`), { what: "a live mark before the commit", timeoutMs: 300 }).catch(() => undefined);
    await runInDurableObject(host, (instance: MarketObject) => {
      instance.tickMs = Number(env.INGEST_TICK_MS ?? "100");
      instance.writer.tick.commitNow();
    });
    await Promise.all(staged);
    await until(() => liveMark(socket, `trades.${symbol}`) || socket.messages.find((m) => m.error), { what: "the live mark" });
    expect(
      socket.messages.find((m) => m.error),
      "no failure",
    ).toBeUndefined();
    expect(tradeIdsOf(socket, `trades.${symbol}`), "every trade since from, the staged ones too").toEqual([lastId - 2, lastId - 1, lastId]);
    for (const s of [watcher, socket]) s.ws.close();
  });

  it("a `from` in the future or more than a day back is refused: an error on a subscribe, a 400 at connect; the streams are not subscribed", async () => {
    const socket = await openSocket("/api/ws", "198.51.100.122");
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 7, streams: ["book.SOLUSDT"], from: Date.now() + 60_000 }));
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 8, streams: ["book.SOLUSDT"], from: Date.now() - 25 * 3_600_000 }));
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 9, streams: ["book.SOLUSDT"], from: "yesterday" }));
    socket.ws.send(JSON.stringify({ op: "list", id: 10 }));
    await until(() => socket.messages.length >= 4, { what: "four answers" });
    for (const [i, id] of [7, 8, 9].entries()) expect(socket.messages[i], `subscribe ${id}`).toMatchObject({ id, error: { code: "INVALID_MESSAGE" } });
    expect(socket.messages[3]).toEqual({ id: 10, result: { streams: [] } });
    socket.ws.close();

    for (const from of [String(Date.now() + 60_000), "yesterday", String(Date.now() - 25 * 3_600_000)]) {
      const refused = await upgrade(`/api/ws?streams=book.SOLUSDT&from=${from}`, "198.51.100.123");
      expect(refused.status, `from=${from}`).toBe(400);
    }
  });
});

describe("a catch-up's pages of book history (bookReplay with toSequence and maxBytes)", () => {
  it("pages of any size, each going on from the book the last one ended at, continue each other and stop at the sequence asked (property)", async () => {
    const symbol = "XRPUSDT";
    await ensureRegistry(env);
    const market = findMarket(symbol)!;
    let sequence = 0;
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: ++sequence, bids: [["0.5000", "10.0"]], asks: [["0.6000", "10.0"]] } });
    const from = Date.now();
    await pause(2);
    // 60 batches, several in each 100 ms window, each touching a few levels.
    for (let b = 0; b < 60; b++) {
      const price = (n: number) => (0.5 - ((b + n) % 7) / 10_000).toFixed(4);
      await ingest(env, "*", {
        symbol,
        book: {
          type: "delta",
          sequence: ++sequence,
          bids: [
            [price(0), `${1 + (b % 5)}.0`],
            [price(3), b % 4 === 0 ? "0" : "2.0"],
          ],
          asks: [],
        },
      });
      if (b % 6 === 5) await pause(30);
    }
    const last = sequence;
    const object = await hostOf(symbol);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 200, max: 4_000 }), fc.integer({ min: 2, max: last }), async (maxBytes, toSequence) => {
        const book = new LocalBook();
        let after: number | undefined;
        for (let pages = 0; pages < 200; pages++) {
          const page = unwrap(await object.bookReplay(market, from, Number.MAX_SAFE_INTEGER, after, { toSequence, maxBytes }));
          for (const message of page.messages)
            expect(book.apply(message as unknown as BookMessage), `page ${pages}, ${message.firstSequence}…${message.sequence}`).toBe("applied");
          if (page.next === undefined) break;
          after = page.next;
        }
        expect(book.sequence, "the pages stop at the sequence asked").toBe(toSequence);
        const history = await callJson<{ checksum: number }>(`/api/orderbook/${symbol}?sequence=${toSequence}`);
        expect(book.checksum(), `the book at ${toSequence}`).toBe(history.body.checksum);
      }),
      { numRuns: 12 },
    );
  });
});
