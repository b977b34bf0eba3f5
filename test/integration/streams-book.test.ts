import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LocalBook } from "../../client/src/index";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, shardOfConnection, type TestSocket, upgrade } from "./streams-support";

type Level = [string, string];

/** A deterministic pseudo-random source, so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
}

/** A client's book from the stream: the client package's LocalBook, counting snapshots and gaps (a checksum mismatch is one). */
class ClientBook {
  readonly book = new LocalBook();
  snapshots = 0;
  gaps = 0;

  constructor(
    socket: TestSocket,
    private readonly stream: string,
  ) {
    const apply = (message: any) => {
      if (message.stream !== this.stream) return;
      if (message.data.type === "snapshot") this.snapshots += 1;
      if (this.book.apply(message.data) !== "applied") this.gaps += 1;
    };
    for (const message of socket.messages) apply(message);
    socket.ws.addEventListener("message", (event) => {
      apply(JSON.parse(event.data as string));
    });
  }

  get sequence(): number {
    return this.book.synced ? this.book.sequence : -1;
  }

  levels() {
    return { bids: this.book.bids(), asks: this.book.asks() };
  }
}

/** A publisher that changes a book at random, never crossing it, and remembers what it holds. */
class Publisher {
  private readonly bids = new Map<string, string>();
  private readonly asks = new Map<string, string>();
  sequence = 0;
  private readonly next: () => number;

  constructor(
    private readonly symbol: string,
    seed: number,
    private readonly quantityScale: number,
  ) {
    this.next = random(seed);
  }

  private price(side: "bids" | "asks"): string {
    const cents = Math.floor(this.next() * 10_000);
    return side === "bids" ? (900 + cents / 100).toFixed(2) : (1000.01 + cents / 100).toFixed(2);
  }

  private quantity(): string {
    return ((1 + Math.floor(this.next() * 99_999)) / 10 ** this.quantityScale).toFixed(this.quantityScale);
  }

  async snapshot(perSide: number): Promise<void> {
    this.bids.clear();
    this.asks.clear();
    while (this.bids.size < perSide) this.bids.set(this.price("bids"), this.quantity());
    while (this.asks.size < perSide) this.asks.set(this.price("asks"), this.quantity());
    this.sequence += 1;
    await ingest(env, "*", { symbol: this.symbol, book: { type: "snapshot", sequence: this.sequence, bids: [...this.bids], asks: [...this.asks] } });
  }

  async delta(): Promise<void> {
    const change = (side: "bids" | "asks"): Level[] => {
      const levels = new Map<string, string>();
      for (let i = 0, n = 1 + Math.floor(this.next() * 3); i < n; i++) {
        const existing = [...this[side].keys()];
        const roll = this.next();
        const price = roll < 0.35 && existing.length > 0 ? existing[Math.floor(this.next() * existing.length)]! : this.price(side);
        levels.set(price, roll < 0.35 ? "0" : this.quantity());
      }
      for (const [price, quantity] of levels) {
        if (quantity === "0") this[side].delete(price);
        else this[side].set(price, quantity);
      }
      return [...levels];
    };
    this.sequence += 1;
    await ingest(env, "*", { symbol: this.symbol, book: { type: "delta", sequence: this.sequence, bids: change("bids"), asks: change("asks") } });
  }

  async deltas(count: number): Promise<void> {
    for (let i = 0; i < count; i++) await this.delta();
  }
}

async function restBook(symbol: string, depth = 1000) {
  const { status, body } = await callJson<{ sequence: number; checksum: number; bids: Level[]; asks: Level[] }>(`/api/orderbook/${symbol}?depth=${depth}`);
  expect(status).toBe(200);
  return body;
}

describe("book stream consistency (docs/streams.md)", () => {
  it("clients that apply the snapshot and deltas end with exactly GET /api/orderbook at the same sequence — joining mid-stream, on two shards, across hibernation", async () => {
    const publisher = new Publisher("BTCUSDT", 7, 5);
    await publisher.snapshot(60);
    const [ipA, ipB] = ["203.0.113.1", "203.0.113.2"];
    const first = await openSocket("/api/ws?streams=book.BTCUSDT", ipA);
    const firstBook = new ClientBook(first, "book.BTCUSDT");
    await publisher.deltas(25);

    // Joins while deltas are in flight: one on the same shard (its snapshot comes from the
    // shard's copy), one on another shard (which registers with the market now).
    const joining = publisher.deltas(25);
    const sameShard = await openSocket("/api/ws?streams=ticker.BTCUSDT", ipA);
    sameShard.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["book.BTCUSDT"] }));
    const sameShardBook = new ClientBook(sameShard, "book.BTCUSDT");
    // Named no market at connect: the general pool's shard, not the group's (docs/streams.md#placement).
    const otherShard = await openSocket("/api/ws", ipB);
    otherShard.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["book.btc-usdt"] }));
    const otherShardBook = new ClientBook(otherShard, "book.BTCUSDT");
    await joining;

    // The first shard hibernates: it loses its copy, gets a new base from the market on the
    // next delta and sends its book subscribers a fresh snapshot.
    await until(() => firstBook.sequence === publisher.sequence);
    await evictDurableObject(env.STREAM_HUB.getByName(await shardOfConnection(`ip:${ipA}`, ["BTCUSDT"])), { webSockets: "hibernate" });
    await publisher.deltas(25);

    const books = [firstBook, sameShardBook, otherShardBook];
    await until(() => books.every((b) => b.sequence === publisher.sequence));
    const rest = await restBook("BTCUSDT");
    expect(rest.sequence).toBe(publisher.sequence);
    for (const book of books) {
      expect(book.gaps).toBe(0);
      // A snapshot taken once the book is deeper than 100 levels carries the best 100 a side
      // (docs/streams.md): the book is exact from the best level down to that depth.
      const levels = book.levels();
      const depth = Math.min(100, rest.bids.length, rest.asks.length);
      expect({ bids: levels.bids.slice(0, depth), asks: levels.asks.slice(0, depth) }).toEqual({
        bids: rest.bids.slice(0, depth),
        asks: rest.asks.slice(0, depth),
      });
    }
    expect(firstBook.snapshots).toBe(2); // at connect, and after the shard woke up
    expect(sameShard.messages.find((m) => m.id === 1)).toEqual({ id: 1, result: { streams: ["ticker.BTCUSDT", "book.BTCUSDT"] } });
    // The ack comes before the stream's first message.
    expect(sameShard.messages.findIndex((m) => m.id === 1)).toBeLessThan(sameShard.messages.findIndex((m) => m.stream === "book.BTCUSDT"));
    for (const s of [first, sameShard, otherShard]) s.ws.close();
  });

  it("a deep book's snapshot carries the 100 best levels a side; a publisher's snapshot that continues the book reaches clients as a delta", async () => {
    const publisher = new Publisher("ETHUSDT", 11, 4);
    await publisher.snapshot(150);
    const socket = await openSocket("/api/ws?streams=book.ETHUSDT", "203.0.114.1");
    const snapshot = await until(() => socket.messages.find((m) => m.stream === "book.ETHUSDT")?.data);
    const top = await restBook("ETHUSDT", 100);
    expect(snapshot).toEqual({ type: "snapshot", sequence: top.sequence, time: expect.any(Number), checksum: top.checksum, bids: top.bids, asks: top.asks });

    // Every level changes: the delta removes the old ones and brings the new, and the client's book continues.
    await publisher.snapshot(150);
    const republished = await until(() => socket.messages.filter((m) => m.stream === "book.ETHUSDT")[1]?.data);
    const after = await restBook("ETHUSDT", 100);
    expect(republished, "the publisher's snapshot as a delta continuing the first message").toMatchObject({
      type: "delta",
      firstSequence: top.sequence + 1,
      sequence: after.sequence,
      checksum: after.checksum,
    });
    const book = { bids: new Map<string, string>(snapshot.bids), asks: new Map<string, string>(snapshot.asks) };
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of republished[side] as Level[]) {
        if (quantity === "0") book[side].delete(price);
        else book[side].set(price, quantity);
      }
    }
    const best = (side: "bids" | "asks") => [...book[side]].sort(([a], [b]) => (side === "bids" ? Number(b) - Number(a) : Number(a) - Number(b))).slice(0, 100);
    expect(best("bids"), "the client's best bids after the delta").toEqual(after.bids);
    expect(best("asks"), "the client's best asks after the delta").toEqual(after.asks);
    socket.ws.close();
  });

  it("a client that reads nothing does not hold the others back, and later gets every delta in order", async () => {
    const publisher = new Publisher("ETHBTC", 17, 4);
    await publisher.snapshot(20);
    // The slow client: its socket is open but nothing of it is read until the end.
    const slowResponse = await upgrade("/api/ws?streams=book.ETHBTC", "203.0.114.9");
    expect(slowResponse.status).toBe(101);
    const fast = await openSocket("/api/ws?streams=book.ETHBTC", "203.0.114.10");
    const fastBook = new ClientBook(fast, "book.ETHBTC");
    await until(() => fastBook.sequence === publisher.sequence, { what: "the fast client's snapshot" });
    for (let round = 0; round < 5; round++) {
      await publisher.deltas(10);
      // The fast client is served while the slow one has read nothing.
      await until(() => fastBook.sequence === publisher.sequence, { what: `the fast client at round ${round}` });
    }
    const slow = slowResponse.webSocket!;
    const slowBook = new LocalBook();
    let slowGaps = 0;
    slow.addEventListener("message", (event) => {
      const message = JSON.parse(event.data as string);
      if (message.stream === "book.ETHBTC" && slowBook.apply(message.data) !== "applied") slowGaps += 1;
    });
    slow.accept();
    await until(() => slowBook.synced && slowBook.sequence === publisher.sequence, { what: "the slow client's book" });
    expect([slowGaps, fastBook.gaps]).toEqual([0, 0]);
    const rest = await restBook("ETHBTC");
    expect({ bids: slowBook.bids(), asks: slowBook.asks() }).toEqual({ bids: rest.bids, asks: rest.asks });
    slow.close();
    fast.ws.close();
  });

  it("an unsubscribe and a new subscribe give a fresh snapshot (the recipe for a gap)", async () => {
    const publisher = new Publisher("SOLBTC", 13, 2);
    await publisher.snapshot(10);
    const socket = await openSocket("/api/ws?streams=book.SOLBTC", "203.0.114.2");
    await until(() => socket.messages.find((m) => m.stream === "book.SOLBTC"));
    await publisher.deltas(3);
    // Deltas reach a shard in its relay's next batch (docs/design.md#group-relays): the client has them first.
    await until(() => socket.messages.find((m) => m.stream === "book.SOLBTC" && m.data.sequence === publisher.sequence));
    socket.ws.send(JSON.stringify({ op: "unsubscribe", id: 2, streams: ["book.SOLBTC"] }));
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 3, streams: ["book.SOLBTC"] }));
    await until(() => socket.messages.find((m) => m.id === 3));
    const snapshots = await until(() => {
      const found = socket.messages.filter((m) => m.stream === "book.SOLBTC" && m.data.type === "snapshot");
      return found.length === 2 && found;
    });
    expect(snapshots[1].data.sequence).toBe(publisher.sequence);
    socket.ws.close();
  });
});

describe("trades, ticker and prices streams", () => {
  it("each accepted trade is published once; a retried trade id is not", async () => {
    const socket = await openSocket("/api/ws?streams=trades.XRPUSDT", "203.0.114.3");
    await until(() => socket.messages.find((m) => m.result));
    const time = Date.now();
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [{ id: "x-1", price: "0.5000", quantity: "10.0", side: "buy", time }] });
    await ingest(env, "*", {
      symbol: "XRPUSDT",
      trades: [
        { id: "x-1", price: "0.5000", quantity: "10.0", side: "buy", time },
        { id: "x-2", price: "0.5001", quantity: "2.5", side: "sell", time },
      ],
    });
    // A third trade is the barrier: the shard forwards in order, so once it is here, a second
    // copy of x-1 would have been here before it.
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [{ id: "x-3", price: "0.5002", quantity: "1.0", side: "buy", time }] });
    await until(() => socket.messages.find((m) => m.stream === "trades.XRPUSDT" && m.data.some((t: { id: string }) => t.id === "x-3")), { what: "trade x-3" });
    const sent = socket.messages.filter((m) => m.stream === "trades.XRPUSDT").flatMap((m) => m.data);
    const first = sent[0].tradeId as number;
    expect(sent).toEqual([
      { tradeId: first, id: "x-1", price: "0.5000", quantity: "10.0", side: "buy", time },
      { tradeId: first + 1, id: "x-2", price: "0.5001", quantity: "2.5", side: "sell", time },
      { tradeId: first + 2, id: "x-3", price: "0.5002", quantity: "1.0", side: "buy", time },
    ]);
    socket.ws.close();
  });

  it("ticker messages come at most once a second, however often the market trades: the rest wait for the market's timer", async () => {
    const socket = await openSocket("/api/ws?streams=ticker.SOLUSDT,trades.SOLUSDT", "203.0.114.4");
    await until(() => socket.messages.find((m) => m.result), { what: "the subscribe ack" });
    const tickers = () => socket.messages.filter((m) => m.stream === "ticker.SOLUSDT").map((m) => m.data);
    // Twenty trades as fast as ingest takes them (well within one second).
    for (let i = 0; i < 20; i++) {
      await ingest(env, "*", {
        symbol: "SOLUSDT",
        trades: [{ id: `s-${i}`, price: `150.${String(i).padStart(3, "0")}`, quantity: "1.00", side: "buy", time: Date.now() }],
      });
    }
    // The shard forwards in order: once the last trade is here, every ticker sent before it is too.
    await until(() => socket.messages.find((m) => m.stream === "trades.SOLUSDT" && m.data.some((t: { id: string }) => t.id === "s-19")), {
      what: "the last trade",
    });
    const early = tickers();
    expect(early.length, "tickers during the burst").toBeLessThanOrEqual(1);
    // The rest is held back for the market's timer, a second after the last ticker at the latest
    // (src/market/market-secondly.ts): it comes by itself.
    const latest = await until(() => tickers().find((t) => t.lastPrice === "150.019"), { what: "the ticker with the last trade" });
    expect(latest).toMatchObject({ symbol: "SOLUSDT", lastPrice: "150.019" });
    expect(tickers().length, "tickers in all").toBe(early.length + 1);
    socket.ws.close();
  });

  it("prices.{QUOTE} carries the /api/prices body when the price index takes a new price", async () => {
    const socket = await openSocket("/api/ws?streams=prices.USDC", "203.0.114.5");
    await until(() => socket.messages.find((m) => m.result));
    await ingest(env, "*", { symbol: "BTCUSDC", trades: [{ id: "p-1", price: "97000.00", quantity: "0.10000", side: "buy", time: Date.now() }] });
    // Earlier messages may predate this price (other markets report too): wait for the one with it.
    const prices = await until(() => socket.messages.find((m) => m.stream === "prices.USDC" && m.data.data.length > 0)?.data);
    expect(prices).toMatchObject({
      quote: "USDC",
      asOf: expect.any(Number),
      data: expect.arrayContaining([expect.objectContaining({ asset: "BTC", price: "97000.00", source: "BTCUSDC" })]),
    });
    socket.ws.close();
  });
});
