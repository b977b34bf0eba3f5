import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { BinanceLocalBook } from "../support/binance-local-book";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, type TestSocket, upgrade } from "./streams-support";

type Level = [string, string];

let ips = 0;
const nextIp = () => `198.18.120.${++ips}`;

/** The frames of one stream on a combined connection, or every non-answer frame on a raw one. */
const framesOf = (socket: TestSocket, stream?: string) =>
  stream === undefined ? socket.messages.filter((m) => m.id === undefined) : socket.messages.filter((m) => m.stream === stream).map((m) => m.data);

async function request(socket: TestSocket, message: Record<string, unknown>) {
  socket.ws.send(JSON.stringify(message));
  return until(() => socket.messages.find((m) => m.id === message.id && ("result" in m || "error" in m)), {
    what: `the answer to ${JSON.stringify(message)} (got ${JSON.stringify(socket.messages).slice(-300)})`,
  });
}

/** Book updates that never cross: bids below 1000, asks above, quantities at 5 decimals. */
const bookChange = fc.record({
  bids: fc.uniqueArray(fc.tuple(fc.integer({ min: 90_000, max: 99_999 }), fc.integer({ min: 0, max: 99_999 })), { maxLength: 4, selector: ([price]) => price }),
  asks: fc.uniqueArray(fc.tuple(fc.integer({ min: 100_001, max: 110_000 }), fc.integer({ min: 0, max: 99_999 })), {
    maxLength: 4,
    selector: ([price]) => price,
  }),
  snapshot: fc.boolean(),
});
const level = ([cents, units]: [number, number]): Level => [(cents / 100).toFixed(2), (units / 100_000).toFixed(5)];

describe("the Binance streams (docs/binance.md#streams)", () => {
  it("Binance's documented local-book algorithm (REST lastUpdateId + buffered diffs U…u) ends exactly at GET depth, across publisher snapshots", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(bookChange, { minLength: 5, maxLength: 25 }), fc.integer({ min: 1, max: 24 }), async (changes, joinAt) => {
        // Each run continues the book the last one left.
        const symbol = "BTCUSDT";
        const depthBefore = (await callJson(`/binance/api/v3/depth?symbol=${symbol}&limit=1000`)).body;
        let sequence = depthBefore.lastUpdateId;
        const socket = await openSocket(`/binance/ws/${symbol.toLowerCase()}@depth@100ms`, nextIp());
        const local = new BinanceLocalBook();
        const seen = new Set<any>();
        const feed = () => {
          for (const frame of framesOf(socket)) if (!seen.has(frame) && seen.add(frame)) local.event(frame);
        };
        for (let i = 0; i < changes.length; i++) {
          const change = changes[i]!;
          sequence += 1;
          const bids = change.bids.map(level).filter(([, q]) => !(change.snapshot && Number(q) === 0));
          const asks = change.asks.map(level).filter(([, q]) => !(change.snapshot && Number(q) === 0));
          await ingest(env, "*", { symbol, book: { type: change.snapshot && i > 0 ? "snapshot" : "delta", sequence, bids, asks } });
          if (i === Math.min(joinAt, changes.length - 1)) {
            feed();
            local.snapshot((await callJson(`/binance/api/v3/depth?symbol=${symbol}&limit=1000`)).body);
          }
        }
        const rest = (await callJson(`/binance/api/v3/depth?symbol=${symbol}&limit=1000`)).body;
        await until(() => {
          feed();
          return local.lastUpdateId >= rest.lastUpdateId;
        }).catch(() => {
          throw new Error(
            `the diff stream never reached ${rest.lastUpdateId}: at ${local.lastUpdateId}, ${local.gaps} gaps; frames ${framesOf(socket).map((f) => `${f.U}…${f.u}`)}`,
          );
        });
        socket.ws.close();
        expect(local.gaps, "gaps").toBe(0);
        expect(local.lastUpdateId).toBe(rest.lastUpdateId);
        expect(local.levels()).toEqual({ bids: rest.bids, asks: rest.asks });
      }),
      // A failing run waits out its poll: shrinking would take minutes, the first counterexample is enough.
      { numRuns: 15, endOnFailure: true },
    );
  }, 60_000);

  it("@depth (Binance's 1000 ms) carries what the diffs of @depth@100ms carry, a second's as one: both end at GET depth", async () => {
    const symbol = "XRPUSDT";
    const socket = await openSocket("/binance/stream?streams=xrpusdt@depth/xrpusdt@depth@100ms", nextIp());
    const start = (await callJson(`/binance/api/v3/depth?symbol=${symbol}&limit=1000`)).body.lastUpdateId as number;
    const diffs = 12;
    for (let i = 1; i <= diffs; i++) {
      const price = (0.5 + i / 1000).toFixed(4);
      await ingest(env, "*", {
        symbol,
        book: { type: i === 1 && start === 0 ? "snapshot" : "delta", sequence: start + i, bids: [[price, `${i}.0`]], asks: [] },
      });
    }
    const rest = (await callJson(`/binance/api/v3/depth?symbol=${symbol}&limit=1000`)).body;
    const books: Record<string, BinanceLocalBook> = {};
    for (const stream of ["xrpusdt@depth", "xrpusdt@depth@100ms"]) {
      const frames = await until(
        () => {
          const all = framesOf(socket, stream);
          return all[all.length - 1]?.u === rest.lastUpdateId ? all : undefined;
        },
        { what: `${stream} up to ${rest.lastUpdateId} (got ${framesOf(socket, stream).map((f) => `${f.U}…${f.u}`)})` },
      );
      const local = new BinanceLocalBook();
      local.snapshot({ lastUpdateId: start, bids: [], asks: [] });
      for (const frame of frames.filter((f) => f.u > start)) local.event(frame);
      expect(local.gaps, `${stream}: gaps`).toBe(0);
      books[stream] = local;
    }
    socket.ws.close();
    const depth = framesOf(socket, "xrpusdt@depth");
    expect(depth.length, "@depth frames, a second's diffs each").toBeLessThanOrEqual(framesOf(socket, "xrpusdt@depth@100ms").length);
    // The levels these diffs set (the local books start empty at `start`), as REST has them.
    const set = new Set(Array.from({ length: diffs }, (_, i) => (0.5 + (i + 1) / 1000).toFixed(4)));
    const expected = (rest.bids as [string, string][]).filter(([price]) => set.has(price));
    expect(expected.length, "the diffs' levels in REST's book").toBe(diffs);
    for (const [stream, local] of Object.entries(books)) {
      expect(
        local.levels().bids.filter(([price]) => set.has(price)),
        `${stream}: its book at the diffs' levels`,
      ).toEqual(expected);
    }
  });

  it("trade, aggTrade, kline, ticker, miniTicker, bookTicker and partial depth carry the ingested data in Binance's events", async () => {
    const socket = await openSocket("/binance/stream", nextIp());
    const streams = ["ethusdt@trade", "ethusdt@aggTrade", "ethusdt@kline_1m", "ethusdt@ticker", "ethusdt@miniTicker", "ethusdt@bookTicker", "ethusdt@depth5"];
    expect(await request(socket, { method: "SUBSCRIBE", params: streams, id: 1 })).toEqual({ result: null, id: 1 });
    const time = Date.now() - 500;
    await ingest(env, "*", {
      symbol: "ETHUSDT",
      trades: [{ id: "e1", price: "3000.00", quantity: "0.5000", side: "sell", time }],
      book: { type: "snapshot", sequence: 1, bids: [["2999.00", "1.0000"]], asks: [["3001.00", "2.0000"]] },
    });
    const frame = (stream: string) => until(() => framesOf(socket, stream)[0], { what: stream });
    expect(await frame("ethusdt@trade")).toMatchObject({ e: "trade", s: "ETHUSDT", t: 1, p: "3000.00", q: "0.5000", T: time, m: true });
    expect(await frame("ethusdt@aggTrade")).toMatchObject({ e: "aggTrade", s: "ETHUSDT", a: 1, f: 1, l: 1, p: "3000.00", q: "0.5000", m: true });
    expect(await frame("ethusdt@bookTicker")).toEqual({ u: 1, s: "ETHUSDT", b: "2999.00", B: "1.0000", a: "3001.00", A: "2.0000" });
    expect(await frame("ethusdt@ticker")).toMatchObject({
      e: "24hrTicker",
      s: "ETHUSDT",
      c: "3000.00",
      Q: "0.5000",
      b: "2999.00",
      B: "1.0000",
      a: "3001.00",
      A: "2.0000",
      n: 1,
    });
    expect(await frame("ethusdt@miniTicker")).toMatchObject({ e: "24hrMiniTicker", s: "ETHUSDT", c: "3000.00", v: "0.5000", q: "1500.000000" });
    const kline = await frame("ethusdt@kline_1m");
    expect(kline).toMatchObject({ e: "kline", s: "ETHUSDT", k: { i: "1m", o: "3000.00", c: "3000.00", v: "0.5000", n: 1 } });
    // Open, unless a minute ended between the trade and the message (then closed, and sent after its end).
    if (kline.k.x) expect(kline.E, "a closed candle is sent after its close").toBeGreaterThan(kline.k.T);
    expect(await until(() => framesOf(socket, "ethusdt@depth5").find((d) => d.lastUpdateId === 1), { what: "depth5" })).toEqual({
      lastUpdateId: 1,
      bids: [["2999.00", "1.0000"]],
      asks: [["3001.00", "2.0000"]],
    });
    socket.ws.close();
  });

  it("SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS / SET_PROPERTY answer {result, id}; bad requests {error: {code, msg}, id}", async () => {
    const socket = await openSocket("/binance/ws/solusdt@trade/0", nextIp());
    expect(await request(socket, { method: "LIST_SUBSCRIPTIONS", id: 1 })).toEqual({ result: ["solusdt@trade"], id: 1 });
    expect(await request(socket, { method: "SUBSCRIBE", params: ["!ticker@arr", "solusdt@depth"], id: "two" })).toEqual({ result: null, id: "two" });
    expect(await request(socket, { method: "UNSUBSCRIBE", params: ["solusdt@trade"], id: 3 })).toEqual({ result: null, id: 3 });
    expect(await request(socket, { method: "LIST_SUBSCRIPTIONS", id: 4 })).toEqual({ result: ["!ticker@arr", "solusdt@depth"], id: 4 });
    expect(await request(socket, { method: "GET_PROPERTY", params: ["combined"], id: 5 })).toEqual({ result: false, id: 5 });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // Binance's 5 messages a second
    expect(await request(socket, { method: "SET_PROPERTY", params: ["combined", true], id: 6 })).toEqual({ result: null, id: 6 });
    expect(await request(socket, { method: "GET_PROPERTY", params: ["combined"], id: 7 })).toEqual({ result: true, id: 7 });
    socket.ws.close();
    // Another connection for the refusals (each connection takes 5 messages a second, and 3 malformed ones).
    const other = await openSocket("/binance/ws/solusdt@trade", nextIp());
    for (const [i, [message, code]] of [
      [{ method: "SUBSCRIBE", params: ["SOLUSDT@trade"], id: 8 }, 2],
      [{ method: "SUBSCRIBE", params: ["solusdt@kline_2m"], id: 9 }, 2],
      [{ method: "SUBSCRIBE", params: ["nopeusdt@trade", "solusdt@ticker"], id: 10 }, 2],
      [{ method: "SUBSCRIBER", params: [], id: 11 }, 2],
      [{ method: "SET_PROPERTY", params: ["combined", "yes"], id: 12 }, 1],
      [{ method: "GET_PROPERTY", params: ["other"], id: 13 }, 0],
    ].entries() as IterableIterator<[number, readonly [{ id: number } & Record<string, unknown>, number]]>) {
      if (i === 4) await new Promise((resolve) => setTimeout(resolve, 1_000)); // 5 messages a second
      expect(await request(other, message), JSON.stringify(message)).toMatchObject({ error: { code, msg: expect.any(String) }, id: message.id });
    }
    // A refused subscribe changed nothing.
    expect(await request(other, { method: "LIST_SUBSCRIPTIONS", id: 14 })).toEqual({ result: ["solusdt@trade"], id: 14 });
    other.ws.close();
    const third = await openSocket("/binance/ws", nextIp());
    third.ws.send("{not json");
    expect(await until(() => third.messages.find((m) => m.error?.code === 3), { what: "code 3" })).toMatchObject({ id: null });
    third.ws.close();
  }, 30_000);

  it("a connection sends at most 5 messages a second, as Binance allows: a sixth within a second closes it (1008)", async () => {
    const socket = await openSocket("/binance/ws", nextIp());
    for (let i = 0; i < 6; i++) socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: i }));
    expect(await socket.closed).toEqual({ code: 1008, reason: "at most 5 messages per second" });
    expect(
      socket.messages.map((m) => m.id),
      "the five within the limit answered",
    ).toEqual([0, 1, 2, 3, 4]);
  });

  it("one address has 5 connections in all, native and Binance: a sixth is 429 -1003", async () => {
    const ip = nextIp();
    const held = [await openSocket("/api/ws", ip), await openSocket("/api/ws", ip)];
    for (let i = 0; i < 3; i++) held.push(await openSocket(i % 2 ? "/binance/ws" : "/binance/stream?streams=btcusdt@trade", ip));
    const sixth = await upgrade("/binance/ws/btcusdt@trade", ip);
    expect(sixth.status).toBe(429);
    expect(await sixth.json()).toMatchObject({ code: -1003, msg: expect.stringContaining("5") });
    for (const socket of held) socket.ws.close();
  });

  it("a plain GET (no upgrade) is a Binance error, not a 5xx", async () => {
    const { status, body } = await callJson("/binance/stream?streams=btcusdt@trade");
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: -1130 });
  });
});
