// `npm run bench:ws -- --restart [-- --clients 1000] [-- --json]`
//
// What every client lives through when every connection drops at once, as on a deploy: N clients
// connected, then the runtime killed and started again on the same storage and socket. Four in
// five clients are the official client's `MarketStream` keeping a `LocalBook` (its own reconnect:
// full-jitter back-off, the stream's snapshot, no REST); one in five speaks the Binance dialect
// through the `ws` package with Binance's local-book method (buffer `@depth` events, REST
// `GET /binance/api/v3/depth`, apply from `lastUpdateId`) and reconnects with the same back-off.
// Five clients per address, spread over four markets that keep moving through it all.
//
// Measured from the kill: when each client is back in sync (its book continuing a snapshot taken
// after the restart), the requests of the storm (upgrades and REST snapshots, each counted by the
// client that sent it), how many were 429s and how many upgrades were refused; whether any client
// gave up (not back within 60 s). At the end the feed stops and every client's book is compared
// with REST at the same sequence. Loopback only, bounded; exits 1 unless all are back within 15 s,
// none gave up and 429s are at most 1 % of the storm's requests.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { sign } from "./signed-load.mjs";

const MARKETS = ["BTCUSDT", "ETHUSDT", "SOLUSDT", "ETHBTC"];
const BINANCE_SHARE = 5; // one client in five
export const TARGET_SECONDS = 15;
const GIVE_UP_SECONDS = 60;
const FEED_EVERY_MS = 250;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const ipOf = (n) => {
  const a = Math.floor(n / 5);
  return `10.${120 + (a >> 16)}.${(a >> 8) & 255}.${a & 255}`;
};

/** The feed: one delta per market every FEED_EVERY_MS over `POST /v1/ingest`, each batch retried until answered (a resent batch is a duplicate). */
function startFeed(state, key) {
  let stopped = false;
  const sequences = Object.fromEntries(MARKETS.map((m) => [m, 1]));
  const send = async (symbol, book) => {
    const body = JSON.stringify({ symbol, book });
    for (;;) {
      try {
        const timestamp = String(Date.now());
        const response = await fetch(`${state.url}/v1/ingest`, {
          method: "POST",
          body,
          headers: {
            "Content-Type": "application/json",
            "X-API-KEY": key.id,
            "X-TIMESTAMP": timestamp,
            "X-SIGNATURE": sign(key.secret, timestamp, "POST", "/v1/ingest", body),
            "CF-Connecting-IP": "10.250.0.9",
          },
        });
        if (response.ok) return;
        if (response.status !== 503 && response.status !== 429) throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
      } catch (error) {
        if (!/fetch failed|ECONNREFUSED|ECONNRESET|other side closed/.test(String(error?.cause ?? error))) throw error;
      }
      await sleep(100); // the runtime is restarting
    }
  };
  const levels = (mid, side) => Array.from({ length: 10 }, (_, i) => [((mid + (side === "bids" ? -1 - i : 1 + i)) / 100).toFixed(2), "1.00"]);
  const ready = Promise.all(
    MARKETS.map((symbol) => send(symbol, [{ type: "snapshot", sequence: 1, bids: levels(10_000, "bids"), asks: levels(10_000, "asks") }])),
  );
  const running = (async () => {
    await ready;
    for (let n = 0; !stopped; n++) {
      const started = now();
      await Promise.all(
        MARKETS.map((symbol) => {
          const sequence = ++sequences[symbol];
          const side = n % 2 ? "bids" : "asks";
          const price = ((10_000 + (side === "bids" ? -1 - (n % 10) : 1 + (n % 10))) / 100).toFixed(2);
          return send(symbol, [
            {
              type: "delta",
              sequence,
              bids: side === "bids" ? [[price, `${1 + (n % 7)}.00`]] : [],
              asks: side === "asks" ? [[price, `${1 + (n % 7)}.00`]] : [],
            },
          ]);
        }),
      );
      await sleep(Math.max(0, FEED_EVERY_MS - (now() - started)));
    }
  })();
  return {
    ready,
    sequences,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** Counts an upgrade the service answered: 101, or refused with a status (an attempt while the runtime is down reaches nothing, and is not counted). */
function counted(socket, stats) {
  socket.on("open", () => {
    stats.upgrades += 1;
  });
  socket.on("error", (error) => {
    const status = /Unexpected server response: (\d+)/.exec(String(error.message))?.[1];
    if (!status) return;
    stats.upgrades += 1;
    stats.refused[status] = (stats.refused[status] ?? 0) + 1;
  });
}

/** A counted `ws` socket from one address: the official client's WebSocket option. */
function socketClass(WebSocket, ip, stats) {
  return class extends WebSocket {
    constructor(url) {
      super(url, { headers: { "CF-Connecting-IP": ip } });
      counted(this, stats);
    }
  };
}

/** A Binance-dialect client: Binance's documented local-book method over `@depth@100ms`, reconnecting with the official client's back-off. */
function binanceClient({ WebSocket, reconnectDelay, backoff, state, symbol, ip, stats }) {
  const client = {
    kind: "binance",
    symbol,
    synced: false,
    syncedAt: undefined,
    gaveUp: false,
    book: { bids: new Map(), asks: new Map() },
    lastUpdateId: 0,
    attempt: 0,
    closed: false,
  };
  const connect = () => {
    if (client.closed) return;
    const socket = new WebSocket(`${state.url.replace(/^http/, "ws")}/binance/ws/${symbol.toLowerCase()}@depth@100ms`, { headers: { "CF-Connecting-IP": ip } });
    client.socket = socket;
    let buffered = [];
    let aligned = false;
    const lost = () => {
      if (client.socket !== socket || client.closed) return;
      client.synced = false;
      client.attempt += 1;
      setTimeout(connect, reconnectDelay(client.attempt, { ...backoff, random: Math.random }));
    };
    counted(socket, stats);
    socket.on("error", () => {}); // a close follows
    socket.on("close", lost);
    const apply = (event) => {
      for (const [side, levels] of [
        ["bids", event.b],
        ["asks", event.a],
      ])
        for (const [p, q] of levels) {
          if (Number(q) === 0) client.book[side].delete(p);
          else client.book[side].set(p, q);
        }
      client.lastUpdateId = event.u;
    };
    /** Binance's steps 3–6: a REST snapshot, again while it is older than the first buffered event, then the buffer from `lastUpdateId`. */
    const sync = async () => {
      aligned = false;
      for (let tries = 0; tries < 50 && client.socket === socket; tries++) {
        let response;
        try {
          response = await fetch(`${state.url}/binance/api/v3/depth?symbol=${symbol}&limit=1000`, { headers: { "CF-Connecting-IP": ip } });
        } catch {
          return socket.terminate();
        }
        stats.requests += 1;
        stats.restSnapshots += 1;
        if (response.status === 429) stats.rateLimited += 1;
        if (!response.ok) return socket.terminate();
        const depth = await response.json();
        // The first event after the snapshot: it may not have come yet (the market moves every FEED_EVERY_MS).
        let first;
        for (let waits = 0; waits < 40 && client.socket === socket && !(first = buffered.find((event) => event.u > depth.lastUpdateId)); waits++)
          await sleep(50);
        if (first === undefined || first.U > depth.lastUpdateId + 1) {
          await sleep(100); // the snapshot is older than the stream: take another
          continue;
        }
        client.book = { bids: new Map(depth.bids), asks: new Map(depth.asks) };
        client.lastUpdateId = depth.lastUpdateId;
        for (const event of buffered) if (event.u > client.lastUpdateId) apply(event);
        buffered = [];
        aligned = true;
        client.synced = true;
        client.syncedAt = now();
        return;
      }
      socket.terminate();
    };
    socket.on("message", (data) => {
      const event = JSON.parse(String(data));
      if (event.e !== "depthUpdate") return;
      if (!aligned) return buffered.push(event);
      if (event.U !== client.lastUpdateId + 1) {
        // A gap: Binance's method starts over from a new snapshot.
        client.synced = false;
        buffered = [event];
        void sync();
        return;
      }
      apply(event);
    });
    socket.on("open", () => {
      client.attempt = 0;
      void sync();
    });
  };
  connect();
  client.close = () => {
    client.closed = true;
    client.socket?.terminate();
  };
  return client;
}

/** Runs the restart against a fresh service; returns the report. */
export async function measureRestart({ clients: count, log, checksum, sorted }) {
  const { default: WebSocket } = await import("ws");
  // The official client as its users get it: built from client/src (its dist is not in the repository).
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(import.meta.dirname, "..", "client")], { stdio: "inherit" });
  const { MarketStream, reconnectDelay, RECONNECT_BACKOFF } = await import("../client/dist/index.js");
  const { bundleService, startService, work } = await import("./service.mjs");
  const persist = path.join(work, "restart-state");
  rmSync(persist, { recursive: true, force: true });
  log(`bundling; ${count} clients (one in ${BINANCE_SHARE} Binance-dialect) on ${MARKETS.length} moving markets, then the runtime restarts`);
  const script = bundleService(true);
  let service = await startService(script, { DEMO_FEED: "off" }, { direct: true, persist });
  const state = { url: service.url };
  const directPort = Number(new URL(service.url).port);
  const stats = { upgrades: 0, refused: {}, restSnapshots: 0, requests: 0, rateLimited: 0, streamSnapshots: 0 };
  const clients = [];
  let feed;
  try {
    const key = await issuePublishKey(service.url, "bench-admin-token", { label: "restart bench" });
    feed = startFeed(state, key);
    await feed.ready;
    for (let n = 0; n < count; n++) {
      const symbol = MARKETS[n % MARKETS.length];
      if (n % BINANCE_SHARE === BINANCE_SHARE - 1) {
        clients.push(binanceClient({ WebSocket, reconnectDelay, backoff: RECONNECT_BACKOFF, state, symbol, ip: ipOf(n), stats }));
      } else {
        const stream = new MarketStream({ baseUrl: state.url, WebSocket: socketClass(WebSocket, ipOf(n), stats), heartbeatTimeoutMs: 0 });
        const client = { kind: "native", symbol, stream, syncedAt: undefined };
        client.local = stream.book(symbol, {
          onUpdate: (book) => {
            if (book.synced && client.syncedAt === undefined) client.syncedAt = now();
          },
          inspect: (message) => {
            if (message.type === "snapshot") stats.streamSnapshots += 1;
            return message;
          },
        });
        stream.onState((s) => {
          if (s !== "open") client.syncedAt = undefined;
        });
        client.close = () => stream.close();
        Object.defineProperty(client, "synced", { get: () => client.local.book.synced && client.stream.state === "open" });
        clients.push(client);
      }
      if (n % 50 === 49) await sleep(100); // under each address's 10 upgrades a second
    }
    for (let i = 0; i < 300 && clients.some((c) => !c.synced); i++) await sleep(100);
    const before = clients.filter((c) => c.synced).length;
    if (before < count) throw new Error(`only ${before} of ${count} clients in sync before the restart`);
    log(`${count} clients in sync; restarting the runtime…`);

    for (const c of clients) c.syncedAt = undefined;
    const counted = {
      upgrades: stats.upgrades,
      requests: stats.requests,
      rateLimited: stats.rateLimited,
      restSnapshots: stats.restSnapshots,
      streamSnapshots: stats.streamSnapshots,
    };
    const killedAt = now();
    await service.mf.dispose();
    service = await startService(script, { DEMO_FEED: "off" }, { direct: true, persist, directPort, restart: true });
    const restartSeconds = (now() - killedAt) / 1000;
    log(`runtime back after ${restartSeconds.toFixed(1)} s; waiting for every client…`);
    for (let i = 0; i < GIVE_UP_SECONDS * 10 && clients.some((c) => c.syncedAt === undefined || !c.synced); i++) await sleep(100);
    const backTimes = clients.filter((c) => c.syncedAt !== undefined).map((c) => (c.syncedAt - killedAt) / 1000);
    const refused = Object.values(stats.refused).reduce((a, b) => a + b, 0);
    const upgrades = stats.upgrades - counted.upgrades;
    const requests = upgrades + (stats.requests - counted.requests);

    // The feed stops; every client's book must equal REST's at the last sequence.
    await feed.stop();
    const feedSequences = { ...feed.sequences };
    feed = undefined;
    const rest = {};
    for (const symbol of MARKETS) {
      // The edge copy may be up to its max age behind: read until it shows the feed's last sequence.
      for (let i = 0; i < 50 && rest[symbol]?.sequence !== feedSequences[symbol]; i++) {
        const answer = await fetch(`${state.url}/api/orderbook/${symbol}?depth=25`, { headers: { "CF-Connecting-IP": "10.250.0.10" } });
        rest[symbol] = await answer.json();
        if (rest[symbol].sequence !== feedSequences[symbol]) await sleep(100);
      }
    }
    for (let i = 0; i < 100; i++) {
      const behind = clients.filter((c) => (c.kind === "native" ? c.local.book.sequence : c.lastUpdateId) < rest[c.symbol].sequence);
      if (behind.length === 0) break;
      await sleep(100);
    }
    const notEqualRest = clients.filter((c) =>
      c.kind === "native"
        ? c.local.book.checksum() !== rest[c.symbol].checksum || c.local.book.sequence !== rest[c.symbol].sequence
        : checksum(sorted("bids", c.book.bids), sorted("asks", c.book.asks)) !== rest[c.symbol].checksum || c.lastUpdateId !== rest[c.symbol].sequence,
    ).length;
    for (const c of clients) {
      const sequence = c.kind === "native" ? c.local.book.sequence : c.lastUpdateId;
      const sum = c.kind === "native" ? c.local.book.checksum() : checksum(sorted("bids", c.book.bids), sorted("asks", c.book.asks));
      if (sequence !== rest[c.symbol].sequence || sum !== rest[c.symbol].checksum)
        log(`not equal to REST: a ${c.kind} client of ${c.symbol} at ${sequence} (REST ${rest[c.symbol].sequence}), synced ${c.synced}`);
    }
    backTimes.sort((a, b) => a - b);
    const rateLimited = (stats.refused["429"] ?? 0) + (stats.rateLimited - counted.rateLimited);
    return {
      clients: count,
      backInSync: backTimes.length,
      gaveUp: count - backTimes.length,
      seconds: Number((backTimes.at(-1) ?? Number.NaN).toFixed(1)),
      p50Seconds: Number((backTimes[Math.floor(backTimes.length / 2)] ?? Number.NaN).toFixed(1)),
      restartSeconds: Number(restartSeconds.toFixed(1)),
      requests,
      upgrades,
      refusedUpgrades: refused,
      rateLimited,
      restSnapshots: stats.restSnapshots - counted.restSnapshots,
      streamSnapshots: stats.streamSnapshots - counted.streamSnapshots,
      binanceClients: clients.filter((c) => c.kind === "binance").length,
      notEqualRest,
    };
  } finally {
    await feed?.stop().catch(() => {});
    for (const c of clients) c.close();
    await service.mf.dispose();
  }
}
