import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { type Heartbeat, type LocalBook, MarketDataClient, MarketDataError, MarketStream, OPERATIONS, type WebSocketConstructor } from "../../client/src/index";
import { until } from "../support/poll";
import { newApiKey, newPublishKey } from "./api-keys";

/**
 * The official client package against the service started as `npm start` does: every public
 * operation, signed calls and streams, and a long book sync through a forced disconnect.
 */
const baseUrl = inject("baseUrl");

let clients = 0;
/** A client of its own address (each simulated client gets the public limit of its own). */
function publicClient(): MarketDataClient {
  clients += 1;
  return new MarketDataClient({ baseUrl, headers: { "CF-Connecting-IP": `198.51.100.${clients}` } });
}

/** The `ws` package with a client address: how a Node 20 user passes a WebSocket to the client. */
function socketFrom(ip: string): WebSocketConstructor {
  return class extends WebSocket {
    constructor(url: string) {
      super(url, { headers: { "CF-Connecting-IP": ip } });
    }
  } as unknown as WebSocketConstructor;
}

/** A fresh API key with these permissions, as the client's options take it. */
async function apiKey(permissions: string[]): Promise<{ apiKey: string; secret: string }> {
  const { id, secret } = await newApiKey(baseUrl, permissions, "198.51.100.250");
  return { apiKey: id, secret };
}

describe("the client package against the running service", () => {
  it("names every public and signed REST operation of /openapi.json, with its method and path", async () => {
    const spec = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
    };
    const documented = Object.entries(spec.paths)
      .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ id: op.operationId, method: method.toUpperCase(), path, tags: op.tags })))
      .filter(
        (op) => op.tags.some((tag) => tag === "Public market data" || tag === "Signed (API key)") && !op.path.endsWith("/ws") && !op.path.endsWith("/publish"),
      );
    expect(Object.fromEntries(Object.entries(OPERATIONS).map(([id, [method, path]]) => [id, `${method} ${path}`]))).toEqual(
      Object.fromEntries(documented.map((op) => [op.id, `${op.method} ${op.path}`])),
    );
    const client = publicClient() as unknown as Record<string, unknown>;
    for (const id of Object.keys(OPERATIONS)) expect(typeof client[id], `client.${id}`).toBe("function");
  });

  it("calls every public operation and gets typed answers", async () => {
    const client = publicClient();
    const { serverTime } = await client.getServerTime();
    expect(Math.abs(serverTime - Date.now())).toBeLessThan(60_000);
    const { markets, rateLimits } = await client.listMarkets();
    expect(markets.map((m) => m.symbol)).toContain("BTCUSDT");
    expect(rateLimits.length).toBeGreaterThan(0);
    const ticker = await client.getTicker({ pair: "btc-usdt" });
    expect(ticker.symbol).toBe("BTCUSDT");
    expect(ticker.lastPrice).toMatch(/^\d+\.\d{2}$/);
    const tickers = await client.listTickers({ symbols: ["BTCUSDT", "ETHUSDT"] });
    expect(tickers.map((t) => t.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    expect((await client.listTickers()).length).toBe(markets.length);
    const top = await client.getBookTicker({ pair: "ETHUSDT" });
    expect(Number(top.bidPrice)).toBeLessThan(Number(top.askPrice));
    expect((await client.listBookTickers()).map((t) => t.symbol)).toEqual(markets.map((m) => m.symbol));
    const book = await client.getOrderBook({ pair: "BTCUSDT", depth: 5 });
    expect(book.bids.length).toBeLessThanOrEqual(5);
    expect(typeof book.checksum).toBe("number");
    const trades = await until(
      async () => {
        const page = await client.listTrades({ pair: "BTCUSDT", limit: 5 });
        return page.length > 0 && page;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: "a demo trade" },
    );
    expect(trades[0]!.tradeId).toBeGreaterThan(0);
    const klines = await client.listKlines({ pair: "BTCUSDT", interval: "1m", limit: 3 });
    expect(klines.length).toBeGreaterThan(0);
    // Prices come from the snapshot the price index writes at most once a second, after a trade's
    // summary reaches it through the market's group relay (docs/api.md#prices): a moment after the trade.
    const prices = await until(
      async () => {
        const answer = await client.getPrices({ assets: ["BTC", "ETH"], quote: "USDT" });
        return answer.data.length === 2 && answer;
      },
      { timeoutMs: 10_000, intervalMs: 500, what: "prices of BTC and ETH" },
    );
    expect(prices.data.map((p) => p.asset).sort()).toEqual(["BTC", "ETH"]);
  });

  it("throws the service's problems typed: code, status, detail and the request id", async () => {
    const error = await publicClient()
      .getTicker({ pair: "DOGEUSDT" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MarketDataError);
    expect(error).toMatchObject({ status: 404, code: "UNKNOWN_SYMBOL" });
    expect((error as MarketDataError).requestId).toMatch(/^[0-9a-f-]{36}$/);
    await expect(publicClient().getOrderBook({ pair: "BTCUSDT", depth: 5001 })).rejects.toMatchObject({ status: 400, code: "VALIDATION_FAILED" });
  });

  it("paces itself under the public limit: 15 calls from one address all succeed, the refused ones retried when the window frees a slot", async () => {
    const client = publicClient();
    const answers = await Promise.all(Array.from({ length: 15 }, () => client.getServerTime()));
    expect(answers.every((a) => typeof a.serverTime === "number")).toBe(true);
    expect(client.pacer.state("public")?.limit).toBe(10);
  });

  it("signs calls with an API key (server time measured first) and streams over the signed /v1/ws", async () => {
    const key = await apiKey(["read", "stream"]);
    const client = new MarketDataClient({ baseUrl, ...key, headers: { "CF-Connecting-IP": "198.51.100.200" } });
    const one = await client.signedGetTicker({ symbol: "BTCUSDT" });
    expect(one).toMatchObject({ symbol: "BTCUSDT" });
    const many = await client.signedGetTicker({ symbols: ["BTCUSDT", "SOLUSDT"] });
    expect(Array.isArray(many) && many.map((t) => t.symbol)).toEqual(["BTCUSDT", "SOLUSDT"]);
    expect((await client.signedGetOrderBook({ symbol: "ETHUSDT", depth: 3 })).bids.length).toBeLessThanOrEqual(3);
    expect((await client.signedListMarkets()).markets.length).toBeGreaterThan(0);
    expect(client.serverClock.offsetMs).toBeDefined();
    await expect(client.ingestMarketData({ symbol: "BTCUSDT", trades: [] })).rejects.toMatchObject({ status: 403, code: "PERMISSION_DENIED" });

    const stream = new MarketStream({ client, WebSocket: socketFrom("198.51.100.200") });
    try {
      const ticks = stream.ticker("BTCUSDT");
      const first = await ticks.next();
      expect(first.value).toMatchObject({ symbol: "BTCUSDT" });
      await ticks.return?.();
    } finally {
      stream.close();
    }
  });

  it("subscribes to the heartbeat, and replaces a connection that stays silent past heartbeatTimeoutMs", async () => {
    const listening = new MarketStream({ baseUrl, WebSocket: socketFrom("198.51.100.203") });
    const quiet = new MarketStream({ baseUrl, WebSocket: socketFrom("198.51.100.204"), heartbeatTimeoutMs: 1000 });
    try {
      const beats = listening.iterate<Heartbeat>("heartbeat");
      const first = await beats.next();
      expect(first.value).toEqual({ time: expect.any(Number), sequence: expect.any(Number) });
      await beats.return?.();
      // Heartbeats come every 5 s; with nothing else subscribed, 1 s of silence means a dead link to this client.
      await until(() => quiet.reconnects >= 1 && quiet.state === "open", { timeoutMs: 15_000, what: "the quiet connection replaced" });
      expect(listening.reconnects, "a connection that hears from the server is kept").toBe(0);
    } finally {
      listening.close();
      quiet.close();
    }
  });

  it("keeps a local book of a minute's worth of updates in sync through a forced disconnect, ending equal to GET /api/orderbook at the same sequence", async () => {
    const symbol = "XRPUSDT";
    const issued = await newPublishKey(baseUrl, [symbol]);
    const publisher = new MarketDataClient({ baseUrl, apiKey: issued.id, secret: issued.secret, headers: { "CF-Connecting-IP": "198.51.100.201" } });
    const reader = publicClient();
    const market = (await reader.listMarkets()).markets.find((m) => m.symbol === symbol)!;
    const stream = new MarketStream({ baseUrl, WebSocket: socketFrom("198.51.100.202") });
    /** The client's whole book at each sequence it held, to compare with REST at that sequence. */
    const seen = new Map<number, string>();
    const ladders = (b: { bids: unknown; asks: unknown }) => JSON.stringify({ bids: b.bids, asks: b.asks });
    let messages = 0;
    const subscription = stream.book(symbol, {
      onUpdate: (book: LocalBook) => {
        messages += 1;
        seen.set(book.sequence, ladders({ bids: book.bids(), asks: book.asks() }));
      },
    });
    try {
      await until(() => subscription.book.synced, { timeoutMs: 10_000, what: "the first snapshot" });
      // A minute of the demo feed is ~120 book messages; publish our own deltas on top to get
      // there in seconds, and drop the connection halfway.
      let sequence = (await reader.getOrderBook({ pair: symbol, depth: 1 })).sequence;
      let published = 0;
      let dropped = false;
      while (messages < 140) {
        if (!dropped && messages >= 70) {
          dropped = true;
          stream.reconnect();
        }
        // The price of a level the book holds (ours, or REST's while ours waits for a snapshot).
        const best = subscription.book.bestBid()?.[0] ?? (await reader.getBookTicker({ pair: symbol })).bidPrice;
        if (best === null) continue;
        const quantity = (1 + (published % 40)).toFixed(market.quantityScale);
        try {
          const answer = await publisher.ingestMarketData({ symbol, book: { type: "delta", sequence: sequence + 1, bids: [[best, quantity]], asks: [] } });
          sequence = answer.sequence;
          published += 1;
        } catch (error) {
          // The demo feed moved the book meanwhile: start from where it is now.
          if (!(error instanceof MarketDataError) || ![400, 409].includes(error.status)) throw error;
          sequence = Number(error.problem.currentSequence ?? (error.problem.expectedSequence as number) - 1);
          if (!Number.isFinite(sequence)) sequence = (await reader.getOrderBook({ pair: symbol, depth: 1 })).sequence;
        }
      }
      expect(dropped && stream.reconnects, "reconnected after the forced disconnect").toBeGreaterThanOrEqual(1);
      expect(published, "deltas this test published").toBeGreaterThan(20);
      const matched = await until(
        async () => {
          const rest = await reader.getOrderBook({ pair: symbol, depth: 1000 });
          const mine = seen.get(rest.sequence);
          if (!subscription.book.synced || mine === undefined) return false;
          expect(mine, `the client's book at sequence ${rest.sequence}`).toBe(ladders(rest));
          return rest;
        },
        { timeoutMs: 15_000, intervalMs: 100, what: "the client's book and REST at the same sequence" },
      );
      expect(subscription.book.sequence).toBeGreaterThanOrEqual(matched.sequence);
    } finally {
      subscription.close();
      stream.close();
    }
  });

  it("book(symbol, { from }) starts at a past moment and comes into live on one subscription: no resync, ending equal to GET /api/orderbook at the same sequence", async () => {
    const symbol = "SOLUSDT"; // the demo feed moves it: its book history since the service started
    const reader = publicClient();
    const stream = new MarketStream({ baseUrl, WebSocket: socketFrom("198.51.100.203") });
    const seen = new Map<number, string>();
    const ladders = (b: { bids: unknown; asks: unknown }) => JSON.stringify({ bids: b.bids, asks: b.asks });
    let live = false;
    let first: number | undefined;
    const subscription = stream.book(symbol, {
      from: Date.now() - 5_000,
      onUpdate: (book: LocalBook) => {
        first ??= book.sequence;
        seen.set(book.sequence, ladders({ bids: book.bids(), asks: book.asks() }));
      },
      onLive: () => (live = true),
    });
    try {
      await until(() => live, { timeoutMs: 20_000, what: "the live mark" });
      const atLive = subscription.book.sequence;
      expect(first, "the book started before it went live").toBeLessThan(atLive);
      await until(() => subscription.book.sequence > atLive, { timeoutMs: 20_000, what: "a live change" });
      expect(stream.resyncs, "no gap on the way into live").toBe(0);
      await until(
        async () => {
          const rest = await reader.getOrderBook({ pair: symbol, depth: 1000 });
          const mine = seen.get(rest.sequence);
          if (mine === undefined) return false;
          expect(mine, `the client's book at sequence ${rest.sequence}`).toBe(ladders(rest));
          return rest;
        },
        { timeoutMs: 15_000, intervalMs: 100, what: "the client's book and REST at the same sequence" },
      );
    } finally {
      subscription.close();
      stream.close();
    }
  });

  it.each([
    ["ticker", /^BTCUSDT last \d+\.\d{2} .*\n(.*last \d+\.\d{2} .*\n){3}$/],
    ["book", /^(#\d+ {2}bid \d+\.\d+ × .* spread \d+\.\d+ .* checksum \d+\n){10}$/],
    ["signed", /signed GET \/v1\/ticker\/24hr\?symbol=BTCUSDT → last \d+\.\d{2}/],
    ["replay", /^(\d{2}:\d{2} UTC {2}spread narrowest \d.* \(\d+ messages\)\n)+\d+ messages replayed from .* to .*\n$/],
    ["from", /^(\d{2}:\d{2} UTC {2}spread narrowest \d.* \(\d+ messages\)\n)*live since .* without a gap\n(live #\d+ {2}spread \d.*\n){5}$/],
  ])("the README's one command for client/examples/%s.mjs runs and prints what it promises", async (name, expected) => {
    const { stdout } = await promisify(execFile)("npm", ["run", "-s", `example:${name}`], {
      cwd: path.resolve(import.meta.dirname, "../.."),
      env: { ...process.env, MDS_BASE_URL: baseUrl, MDS_API_KEY: "", MDS_API_SECRET: "" },
      timeout: 90_000,
    });
    expect(stdout).toMatch(expected);
  });

  // The machine's own Node (20 on this project's machines), not the Node 24 that npm scripts use.
  const systemNode = ["/usr/bin/node", "/usr/local/bin/node"].find((file) => existsSync(file) && file !== process.execPath);
  it.skipIf(!systemNode)("the ticker example runs unchanged on the machine's own Node (20 here), with the ws package's WebSocket", async () => {
    const run = promisify(execFile);
    const { stdout: version } = await run(systemNode!, ["--version"]);
    const { stdout } = await run(systemNode!, ["client/examples/ticker.mjs"], {
      cwd: path.resolve(import.meta.dirname, "../.."),
      env: { ...process.env, MDS_BASE_URL: baseUrl },
      timeout: 60_000,
    });
    expect(stdout, `the ticker example on Node ${version.trim()}`).toMatch(/^BTCUSDT last \d+\.\d{2} .*\n(.*last \d+\.\d{2} .*\n){3}$/);
  });
});
