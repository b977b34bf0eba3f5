import { describe, expect, inject, it } from "vitest";
import { LocalBook } from "../../client/src/index";
import { until } from "../support/poll";
import { type Connection, connect, isOpen } from "./ws-client";

const baseUrl = inject("baseUrl");
let ipCounter = 0;
const freshIp = () => `198.18.${Math.floor(++ipCounter / 200)}.${ipCounter % 200}`;

async function open(path: string, ip = freshIp()): Promise<Connection> {
  const connection = await connect(baseUrl, path, ip);
  if (!isOpen(connection)) throw new Error(`refused: ${connection.status} ${JSON.stringify(connection.body)}`);
  return connection;
}

describe("WebSocket streams (docs/streams.md)", () => {
  it("subscribe, ack, list and unsubscribe; data arrives on ticker, trades and book", async () => {
    const c = await open("/api/ws");
    c.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["ticker.BTCUSDT", "trades.btcusdt", "book.BTCUSDT"] }));
    expect(await c.next((m) => m.id === 1)).toEqual({ id: 1, result: { streams: ["ticker.BTCUSDT", "trades.BTCUSDT", "book.BTCUSDT"] } });
    expect((await c.next((m) => m.stream === "book.BTCUSDT")).data.type).toBe("snapshot");
    // An interval's trades come as one message, an array in tradeId order (docs/streams.md#conflation).
    expect((await c.next((m) => m.stream === "trades.BTCUSDT")).data[0]).toMatchObject({
      price: expect.stringMatching(/^\d+\.\d{2}$/),
      side: expect.stringMatching(/buy|sell/),
    });
    expect((await c.next((m) => m.stream === "ticker.BTCUSDT", 5000)).data).toMatchObject({ symbol: "BTCUSDT", lastPrice: expect.any(String) });
    c.ws.send(JSON.stringify({ op: "unsubscribe", id: 2, streams: ["trades.BTCUSDT"] }));
    expect(await c.next((m) => m.id === 2)).toEqual({ id: 2, result: { streams: ["ticker.BTCUSDT", "book.BTCUSDT"] } });
    c.ws.send(JSON.stringify({ op: "list", id: 3 }));
    expect((await c.next((m) => m.id === 3)).result.streams).toEqual(["ticker.BTCUSDT", "book.BTCUSDT"]);
    c.ws.send(JSON.stringify({ op: "ping" }));
    expect(await c.next((m) => m.op === "pong")).toEqual({ op: "pong", time: expect.any(Number) });
    c.ws.send(JSON.stringify({ op: "ping", id: 4 }));
    expect(await c.next((m) => m.op === "pong" && m.id === 4)).toMatchObject({ time: expect.any(Number) });
    c.ws.send("ping"); // the keepalive, answered by the runtime
    await until(() => c.texts.includes("pong"), { timeoutMs: 1000, what: "the runtime's pong" });
    expect(c.texts).toEqual(["pong"]);
    c.ws.send(JSON.stringify({ op: "subscribe", id: 5, streams: ["book.DOGEUSDT"] }));
    expect((await c.next((m) => m.id === 5)).error.code).toBe("UNKNOWN_STREAM");
    c.ws.close();
  });

  it("a client applying the book stream ends with exactly the book GET /api/orderbook returns at the same sequence", async () => {
    const c = await open("/api/ws?streams=book.ETHUSDT");
    // The client package's book, fed the raw frames: every message must continue it (no gap) and pass its checksum.
    const book = new LocalBook();
    const states = new Map<number, string>();
    const apply = (m: any) => {
      if (m.stream !== "book.ETHUSDT") return;
      expect(book.apply(m.data), `${m.data.type} ${m.data.sequence} after ${book.sequence}`).toBe("applied");
      states.set(book.sequence, JSON.stringify({ bids: book.bids(), asks: book.asks() }));
    };
    for (const m of c.messages) apply(m);
    c.ws.on("message", (data) => apply(JSON.parse(String(data))));
    // Three times, catch the client and REST at the same sequence and compare the whole book.
    let compared = 0;
    await until(
      async () => {
        const rest = (await (await fetch(`${baseUrl}/api/orderbook/ETHUSDT?depth=1000`, { headers: { "CF-Connecting-IP": freshIp() } })).json()) as any;
        // The stream may be a moment behind REST (a market's changes go out once per 100 ms at most):
        // let the client reach that sequence first. A delta that merged it with others has no state for it.
        if (book.sequence < rest.sequence) {
          await until(() => book.sequence >= rest.sequence, { timeoutMs: 3000, intervalMs: 20, what: `the client at sequence ${rest.sequence}` }).catch(
            () => undefined,
          );
        }
        const mine = states.get(rest.sequence);
        if (mine) {
          expect(mine, `the book at sequence ${rest.sequence}`).toBe(JSON.stringify({ bids: rest.bids, asks: rest.asks }));
          compared += 1;
        }
        return compared >= 3;
      },
      { timeoutMs: 20_000, intervalMs: 700, what: "three comparisons at the same sequence" },
    );
    c.ws.close();
  });

  it("a sixth connection of one IP is refused with 429 STREAM_LIMIT; a closed or dropped one frees its slot at once", async () => {
    const ip = freshIp();
    const five = await Promise.all(Array.from({ length: 5 }, () => open("/api/ws", ip)));
    // Upgrades are limited responses too: the 101 carries the IP's RateLimit headers.
    expect(five[0]!.upgradeHeaders["ratelimit-limit"]).toBe("10");
    expect(Number(five[0]!.upgradeHeaders["ratelimit-remaining"])).toBeLessThan(10);
    const sixth = await connect(baseUrl, "/api/ws", ip);
    expect(isOpen(sixth)).toBe(false);
    expect(sixth).toMatchObject({ status: 429, body: { status: 429, code: "STREAM_LIMIT", requestId: expect.any(String) } });
    five[0]!.ws.close();
    await five[0]!.closed;
    const replacement = await connect(baseUrl, "/api/ws", ip);
    expect(isOpen(replacement)).toBe(true);
    five[1]!.ws.terminate(); // the TCP connection drops without a close frame
    // The service learns of the drop from the network, not at once: retry until the slot is free.
    const afterDrop = await until(
      async () => {
        const attempt = await connect(baseUrl, "/api/ws", ip);
        return isOpen(attempt) ? attempt : undefined;
      },
      { timeoutMs: 3000, intervalMs: 150, what: "the dropped connection's slot" },
    );
    expect(isOpen(afterDrop)).toBe(true);
    expect(isOpen(await connect(baseUrl, "/api/ws", freshIp()))).toBe(true); // another IP has its own five
    for (const c of [...five, replacement, afterDrop]) if (isOpen(c)) c.ws.close();
  });

  it("abuse: oversized frames, floods, non-JSON, unknown ops and 51 streams get their answers; others stay served", async () => {
    const bystander = await open("/api/ws?streams=trades.BTCUSDT");

    const big = await open("/api/ws");
    big.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["x".repeat(5000)] }));
    expect(await big.closed).toEqual({ code: 1008, reason: expect.stringContaining("4096") });

    const flood = await open("/api/ws");
    for (let i = 0; i < 15; i++) flood.ws.send(JSON.stringify({ op: "list", id: i }));
    expect((await flood.closed).code).toBe(1008);

    const junk = await open("/api/ws");
    junk.ws.send("not json");
    expect((await junk.next((m) => m.error)).error.code).toBe("INVALID_MESSAGE");
    junk.ws.send(JSON.stringify({ op: "dance", id: 9 }));
    expect((await junk.next((m) => m.id === 9)).error.code).toBe("UNKNOWN_OP");
    junk.ws.send(JSON.stringify({ op: "subscribe", id: 10, streams: Array.from({ length: 51 }, (_, i) => (i % 2 ? "ticker.BTCUSDT" : "book.ETHUSDT")) }));
    expect((await junk.next((m) => m.id === 10)).error.code).toBe("TOO_MANY_STREAMS");
    junk.ws.send("still not json");
    junk.ws.send("nor this");
    junk.ws.send("nor that");
    expect((await junk.closed).code).toBe(1008);

    const before = bystander.messages.length;
    await bystander.next((m) => m.stream === "trades.BTCUSDT" && bystander.messages.indexOf(m) >= before, 10_000);
    bystander.ws.close();
  });

  it("a connection may hold every stream there is (24 < 50)", async () => {
    const c = await open("/api/ws");
    const names = ["ticker", "trades", "book"].flatMap((kind) =>
      ["BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "ETHBTC", "SOLBTC", "BTCUSDC"].map((s) => `${kind}.${s}`),
    );
    c.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: [...names, "prices.USDT", "prices.BTC", "prices.USDC"] }));
    expect((await c.next((m) => m.id === 1)).result.streams).toHaveLength(24);
    expect((await c.next((m) => m.stream === "prices.USDT", 10_000)).data).toMatchObject({ quote: "USDT", data: expect.any(Array) });
    c.ws.close();
  });
});
