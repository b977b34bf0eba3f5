// `npm run bench:ws -- --soak 600` is the stream soak instead: drops per hour by close code (bench/ws-soak.mjs).
// `npm run bench:ws -- --announce` measures an announcement's reach to every client instead (bench/ws-announce.mjs).
// `npm run bench:ws -- --markets 2000` counts relay→shard calls at venue scale, placed by group and by principal (bench/ws-venue.mjs).
// `npm run bench:ws -- --restart` restarts the runtime under N clients and measures their way back (bench/ws-restart.mjs).
//
// `npm run bench:ws [-- --clients 1000] [-- --rate 5000] [-- --trades 1000] [-- --others 19] [-- --seconds 10] [-- --json]`
//
// One market (BTCUSDT) fed at `--rate` book updates and `--trades` trades a second through the
// publisher channel (`GET /v1/publish`, batches gathered every 20 ms, as a feed handler sends
// them; the same connection feeds `--others` more markets at 500 updates a second each), N WebSocket clients on its book and trades streams through `/api/ws` (five per client
// address, the most one address may hold, so they spread over the StreamHub shards like real
// users), on workerd via Miniflare with each Worker on its own socket.
//
// The publisher runs on its own thread, as a real publisher is its own system. Each client keeps
// the book from its snapshot and the conflated deltas (docs/streams.md#conflation), checks every
// delta's range and checksum, and counts the trades it got. Reported: messages delivered a second
// and per client per stream, ingest→delivery p50/p99 (from sending the batch that held a delta's
// first update to the client's receipt of the delta, one clock: `performance.timeOrigin +
// performance.now()`), lost updates, gaps, checksum failures, each client's book against REST at
// the end, and workerd's CPU per delivered message against the **floor**: a trivial object
// sending one fixed text of the same size to the same number of hibernated sockets, at the same
// rate, in the same run. Loopback only; bounded in time; exits 1 when anything was lost.
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { option } from "./load.mjs";
import { sign } from "./signed-load.mjs";

const args = process.argv.slice(2);
const CLIENTS = Number(option("clients", 1000));
const RATE = Number(option("rate", 5000));
const TRADE_RATE = Number(option("trades", Math.round(RATE / 5)));
const SECONDS = Number(option("seconds", 10));
const TICK_MS = 20;
const CHECKSUM_SAMPLE = 20;
/** Other markets fed on the same publisher connection meanwhile (`--others`), each at this rate. */
const OTHERS = Number(option("others", 19));
const OTHER_RATE = 500;
const OTHER_BATCH_MS = 100;
const SHARDS = 4; // the hot market's group's shards here (STREAM_GROUP_SHARDS), and the floor's objects
const asJson = args.includes("--json");
const SOAK = args.includes("--soak") ? Number(option("soak", 600)) : undefined;
const log = (...line) => {
  if (!asJson) console.log(...line);
};

if (isMainThread) {
  setTimeout(
    () => {
      console.error("bench:ws did not finish in time");
      process.exit(2);
    },
    ((SOAK ?? 2 * SECONDS) + 240) * 1000,
  ).unref();
}

/** Milliseconds on a clock every thread of this process shares. */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : Number.NaN);
const LEVELS = 20;
const price = (units) => (units / 100).toFixed(2);
const MID = 9_700_000;

/** docs/streams.md#checksums: CRC-32 of `p:q,…|p:q,…` over the best 25 levels a side. */
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function checksum(bids, asks) {
  const text = `${bids
    .slice(0, 25)
    .map(([p, q]) => `${p}:${q}`)
    .join(",")}|${asks
    .slice(0, 25)
    .map(([p, q]) => `${p}:${q}`)
    .join(",")}`;
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
const sorted = (side, levels) => [...levels].sort(([a], [b]) => (side === "bids" ? Number(b) - Number(a) : Number(a) - Number(b)));

/** The publisher thread: batches every 20 ms over /v1/publish; answers with [sequence, sentAt] per batch's first update, and the totals. */
async function publish({ url, key, rate, tradeRate, seconds, startSequence, others }) {
  const { default: WebSocket } = await import("ws");
  const timestamp = String(Date.now());
  const signature = sign(key.secret, timestamp, "GET", "/v1/publish");
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/publish?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`, {
    headers: { "CF-Connecting-IP": "10.250.0.3" },
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let unanswered = 0;
  let failure;
  ws.on("message", (data) => {
    unanswered -= 1;
    const answer = JSON.parse(String(data));
    if (answer.error) failure ??= new Error(`batch ${answer.id}: ${JSON.stringify(answer.error)}`);
  });
  // The other markets on the same connection: a snapshot each, then OTHER_RATE deltas a second.
  const otherState = others.map((symbol) => ({ symbol, sequence: 1, due: 0, n: 0 }));
  for (const other of otherState) {
    unanswered += 1;
    const bids = Array.from({ length: 5 }, (_, i) => [price(10_000 - 1 - i), "1.000"]);
    const asks = Array.from({ length: 5 }, (_, i) => [price(10_000 + 1 + i), "1.000"]);
    ws.send(JSON.stringify({ id: `${other.symbol}-0`, symbol: other.symbol, book: { type: "snapshot", sequence: 1, bids, asks } }));
  }
  const sentAt = [];
  let sequence = startSequence;
  let trades = 0;
  let otherUpdates = 0;
  let n = 0;
  const due = { updates: 0, trades: 0 };
  const started = now();
  let last = started;
  let id = 0;
  while (now() - started < seconds * 1000) {
    const t = now();
    due.updates += ((t - last) * rate) / 1000;
    due.trades += ((t - last) * tradeRate) / 1000;
    last = t;
    if (unanswered < 60 && (due.updates >= 1 || due.trades >= 1)) {
      const book = [];
      for (; due.updates >= 1; due.updates -= 1) {
        sequence += 1;
        n += 1;
        const side = n % 2 ? "bids" : "asks";
        const offset = 1 + (n % LEVELS);
        const level = [price(side === "bids" ? MID - offset : MID + offset), (1 + (n % 97) / 100).toFixed(5)];
        book.push({ type: "delta", sequence, bids: side === "bids" ? [level] : [], asks: side === "asks" ? [level] : [] });
      }
      const batchTrades = [];
      for (; due.trades >= 1; due.trades -= 1)
        batchTrades.push({ id: `wsb-${++trades}`, price: price(MID + 1), quantity: "0.00100", side: "buy", time: Date.now() });
      if (book.length > 0) sentAt.push([book[0].sequence, book.at(-1).sequence, now()]);
      unanswered += 1;
      ws.send(JSON.stringify({ id: ++id, symbol: "BTCUSDT", ...(book.length ? { book } : {}), ...(batchTrades.length ? { trades: batchTrades } : {}) }));
    }
    for (const other of otherState) {
      // Their updates are gathered for OTHER_BATCH_MS: nobody watches them here, and a stream
      // sends a market's changes once per 100 ms anyway.
      if (t - (other.sentAt ?? 0) < OTHER_BATCH_MS) continue;
      other.due += ((t - (other.last ?? t)) * OTHER_RATE) / 1000;
      other.last = t;
      if (other.due < 1 || unanswered >= 60) continue;
      other.sentAt = t;
      const book = [];
      for (; other.due >= 1; other.due -= 1) {
        other.sequence += 1;
        other.n += 1;
        const side = other.n % 2 ? "bids" : "asks";
        const level = [price(side === "bids" ? 10_000 - 1 - (other.n % 5) : 10_000 + 1 + (other.n % 5)), `${1 + (other.n % 9)}.000`];
        book.push({ type: "delta", sequence: other.sequence, bids: side === "bids" ? [level] : [], asks: side === "asks" ? [level] : [] });
      }
      unanswered += 1;
      otherUpdates += book.length;
      ws.send(JSON.stringify({ id: ++id, symbol: other.symbol, book }));
    }
    await sleep(Math.max(1, TICK_MS - (now() - t)));
  }
  for (let i = 0; i < 200 && unanswered > 0; i++) await sleep(25);
  ws.close();
  if (failure) throw failure;
  return { sentAt, lastSequence: sequence, trades, otherUpdates, others: otherState.map((o) => [o.symbol, o.sequence]) };
}

function publisherThread(options) {
  const worker = new Worker(new URL(import.meta.url), { workerData: options });
  const failed = new Promise((_resolve, reject) => {
    worker.once("error", reject);
    worker.once("exit", (code) => code !== 0 && reject(new Error(`publisher exited with ${code}`)));
  });
  const next = () => Promise.race([new Promise((resolve) => worker.once("message", resolve)), failed]);
  return next().then(() => ({
    run() {
      worker.postMessage("go");
      return next();
    },
  }));
}

async function publisherMain() {
  parentPort.postMessage("ready");
  await new Promise((resolve) => parentPort.once("message", resolve));
  parentPort.postMessage(await publish(workerData));
}

/**
 * A client's copy of the book and what it got, kept from the stream as docs/streams.md says.
 * Every client checks each delta's range and its book against REST at the end; one in
 * `CHECKSUM_SAMPLE` also checks every message's checksum (the load generator shares the
 * machine's two cores with workerd: checking all of them would measure the generator).
 */
function newClient(socket, verifyEach) {
  const client = {
    socket,
    sequence: 0,
    snapshots: 0,
    gaps: 0,
    badChecksums: 0,
    bookMessages: 0,
    tradeMessages: 0,
    trades: 0,
    lastTradeId: 0,
    tradeGaps: 0,
    receipts: [],
    book: { bids: new Map(), asks: new Map() },
  };
  socket.on("message", (data) => {
    const receivedAt = now();
    const { stream, data: payload } = JSON.parse(String(data));
    if (stream === "trades.BTCUSDT") {
      client.tradeMessages += 1;
      for (const trade of payload) {
        if (client.lastTradeId && trade.tradeId !== client.lastTradeId + 1) client.tradeGaps += 1;
        client.lastTradeId = trade.tradeId;
        client.trades += 1;
      }
      return;
    }
    if (stream !== "book.BTCUSDT") return;
    if (payload.type === "snapshot") {
      client.snapshots += 1;
      client.book.bids.clear();
      client.book.asks.clear();
    } else {
      client.bookMessages += 1;
      if ((payload.firstSequence ?? payload.sequence) !== client.sequence + 1) client.gaps += 1;
      client.receipts.push(payload.firstSequence, receivedAt);
    }
    for (const side of ["bids", "asks"]) {
      for (const [p, q] of payload[side]) {
        if (Number(q) === 0) client.book[side].delete(p);
        else client.book[side].set(p, q);
      }
    }
    client.sequence = payload.sequence;
    if (verifyEach && payload.checksum !== undefined && checksum(sorted("bids", client.book.bids), sorted("asks", client.book.asks)) !== payload.checksum)
      client.badChecksums += 1;
  });
  return client;
}

/** Connects `count` WebSocket clients, five per address, fifty at a time (under each address's 10 upgrades a second). */
async function connectAll(WebSocket, urlOf, count, onSocket) {
  const clients = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, k) => {
      const n = i + k;
      const ip = Math.floor(n / 5);
      return new Promise((resolve, reject) => {
        const socket = new WebSocket(urlOf(n), { headers: { "CF-Connecting-IP": `10.${100 + (ip >> 16)}.${(ip >> 8) & 255}.${ip & 255}` } });
        const client = onSocket(socket, n);
        socket.on("open", () => resolve(client));
        socket.on("unexpected-response", (_request, response) => reject(new Error(`client ${n} refused: ${response.statusCode}`)));
        socket.on("error", reject);
      });
    });
    clients.push(...(await Promise.all(batch)));
  }
  return clients;
}

/** The floor: the same number of hibernated sockets, the same number of messages each, of the same size, at the same rate. */
async function measureFloor(WebSocket, { bundleFloor, startReference }, { clients, perClient, seconds, text }) {
  const floor = await startReference(bundleFloor(asJson), { direct: true });
  const sockets = [];
  let received = 0;
  try {
    const base = floor.url.replace(/^http/, "ws");
    sockets.push(
      ...(await connectAll(
        WebSocket,
        (n) => `${base}/ws?shard=${n % SHARDS}`,
        clients,
        (socket) => {
          socket.on("message", () => {
            received += 1;
          });
          return socket;
        },
      )),
    );
    const times = Math.max(1, Math.round(perClient));
    const everyMs = Math.max(0, Math.round((seconds * 1000) / times));
    const cpuBefore = floor.cpuSeconds();
    await Promise.all(
      Array.from({ length: SHARDS }, (_, s) => fetch(`${floor.url}/fanout?shard=${s}`, { method: "POST", body: JSON.stringify({ text, times, everyMs }) })),
    );
    for (let i = 0; i < 100 && received < times * clients; i++) await sleep(50);
    const cpu = floor.cpuSeconds() - cpuBefore;
    return { delivered: received, cpuUsPerMessage: Number(((cpu * 1e6) / Math.max(1, received)).toFixed(2)) };
  } finally {
    for (const s of sockets) s.terminate();
    await floor.mf.dispose();
  }
}

async function main() {
  const { default: WebSocket } = await import("ws");
  const service_ = await import("./service.mjs");
  const { bundleService, startService } = service_;
  log(`bundling; ${CLIENTS} clients on book and trades, ${RATE} book updates/s and ${TRADE_RATE} trades/s for ${SECONDS} s`);
  // One hot market's group with as many shards as the floor has objects (docs/streams.md#placement: a busy group gets more).
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off", STREAM_GROUP_SHARDS: String(SHARDS) }, { direct: true });
  let clients = [];
  let report;
  try {
    // Publishing keys are the operator's (docs/operations.md#publish-keys).
    const key = await issuePublishKey(service.url, "bench-admin-token", { label: "ws bench" });
    const bids = Array.from({ length: LEVELS }, (_, i) => [price(MID - 1 - i), "1.00000"]);
    const asks = Array.from({ length: LEVELS }, (_, i) => [price(MID + 1 + i), "1.00000"]);
    const raw = JSON.stringify({ symbol: "BTCUSDT", book: { type: "snapshot", sequence: 1, bids, asks } });
    const timestamp = String(Date.now());
    const first = await fetch(`${service.url}/v1/ingest`, {
      method: "POST",
      body: raw,
      headers: {
        "Content-Type": "application/json",
        "X-API-KEY": key.id,
        "X-TIMESTAMP": timestamp,
        "X-SIGNATURE": sign(key.secret, timestamp, "POST", "/v1/ingest", raw),
        "CF-Connecting-IP": "10.250.0.2",
      },
    });
    if (!first.ok) throw new Error(`ingest answered ${first.status}: ${await first.text()}`);
    const rssBefore = service.rssMiB();
    const wsBase = service.url.replace("http", "ws");
    clients = await connectAll(
      WebSocket,
      () => `${wsBase}/api/ws?streams=book.BTCUSDT,trades.BTCUSDT`,
      CLIENTS,
      (socket, n) => newClient(socket, n % CHECKSUM_SAMPLE === 0),
    );
    for (let i = 0; i < 100 && clients.some((c) => c.snapshots === 0); i++) await sleep(100);
    const withoutSnapshot = clients.filter((c) => c.snapshots === 0).length;
    if (withoutSnapshot > 0) throw new Error(`${withoutSnapshot} clients got no snapshot`);
    const rssConnected = service.rssMiB();
    log(`${clients.length} clients connected, each with its snapshot; workerd RSS ${rssBefore} → ${rssConnected} MiB; publishing…`);

    // The other markets: generated ones with a 0.01 tick (every third of the venue script's).
    const others = Array.from({ length: OTHERS }, (_, i) => `V${3 * i}USDT`);
    if (OTHERS > 0) await listVenue({ url: service.url, token: "bench-admin-token", count: 3 * OTHERS, headers: { "CF-Connecting-IP": "10.250.0.5" } });
    const publisher = await publisherThread({ url: service.url, key, rate: RATE, tradeRate: TRADE_RATE, seconds: SECONDS, startSequence: 1, others });
    const cpuBefore = service.cpuSeconds();
    const nodeCpuBefore = process.cpuUsage();
    const started = now();
    const published = await publisher.run();
    for (let i = 0; i < 100 && clients.some((c) => c.sequence < published.lastSequence || c.trades < published.trades); i++) await sleep(50);
    const elapsed = (now() - started) / 1000;
    const runtimeCpu = service.cpuSeconds() - cpuBefore;
    const nodeCpu = process.cpuUsage(nodeCpuBefore);

    // Latency of each delta: from sending the batch that held its first update to the receipt.
    const sentAt = new Map();
    for (const [from, to, time] of published.sentAt) for (let s = from; s <= to; s++) sentAt.set(s, time);
    const latencies = [];
    for (const c of clients) for (let i = 0; i < c.receipts.length; i += 2) latencies.push(c.receipts[i + 1] - sentAt.get(c.receipts[i]));
    latencies.sort((a, b) => a - b);
    const rest = await (await fetch(`${service.url}/api/orderbook/BTCUSDT?depth=25`, { headers: { "CF-Connecting-IP": "10.250.0.4" } })).json();
    let othersBehind = 0;
    for (const [i, [symbol, last]] of published.others.entries()) {
      const book = await (await fetch(`${service.url}/api/orderbook/${symbol}?depth=1`, { headers: { "CF-Connecting-IP": `10.250.1.${i}` } })).json();
      if (book.sequence !== last) othersBehind += 1;
    }
    const notEqualRest = clients.filter((c) => checksum(sorted("bids", c.book.bids), sorted("asks", c.book.asks)) !== rest.checksum).length;
    const delivered = clients.reduce((n, c) => n + c.bookMessages + c.tradeMessages, 0);
    const perClient = delivered / clients.length;
    const text = JSON.stringify({
      stream: "book.BTCUSDT",
      data: { type: "delta", firstSequence: 1, sequence: 501, time: Date.now(), checksum: 1234567890, bids: bids.slice(0, 8), asks: asks.slice(0, 8) },
    });
    log(`measuring the floor: ${clients.length} sockets, ${Math.round(perClient)} messages each of ${text.length} bytes over ${SECONDS} s…`);
    for (const c of clients) c.socket.terminate();
    const serviceCpuPerMessage = Number(((runtimeCpu * 1e6) / Math.max(1, delivered)).toFixed(2));
    const floor = await measureFloor(WebSocket, service_, { clients: clients.length, perClient, seconds: SECONDS, text });
    report = {
      clients: clients.length,
      updatesPerSecond: RATE,
      tradesPerSecond: TRADE_RATE,
      seconds: SECONDS,
      lastSequence: published.lastSequence,
      lostClients: clients.filter((c) => c.sequence < published.lastSequence).length,
      gaps: clients.reduce((n, c) => n + c.gaps, 0),
      badChecksums: clients.reduce((n, c) => n + c.badChecksums, 0),
      resnapshots: clients.reduce((n, c) => n + c.snapshots - 1, 0),
      notEqualRest,
      tradesPublished: published.trades,
      others: { markets: OTHERS, updatesPerSecond: Math.round(published.otherUpdates / elapsed), notAllStored: othersBehind },
      tradesMissing: clients.reduce((n, c) => n + Math.max(0, published.trades - c.trades), 0),
      tradeGaps: clients.reduce((n, c) => n + c.tradeGaps, 0),
      messagesPerSecond: Math.round(delivered / elapsed),
      perClientPerSecond: {
        book: Number((clients.reduce((n, c) => n + c.bookMessages, 0) / clients.length / elapsed).toFixed(1)),
        trades: Number((clients.reduce((n, c) => n + c.tradeMessages, 0) / clients.length / elapsed).toFixed(1)),
      },
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      maxMs: Number(latencies.at(-1)?.toFixed(1)),
      cpuUsPerMessage: {
        service: serviceCpuPerMessage,
        floor: floor.cpuUsPerMessage,
        ratio: Number((serviceCpuPerMessage / floor.cpuUsPerMessage).toFixed(2)),
      },
      runtimeRssMiB: { beforeClients: rssBefore, withClients: rssConnected },
      cpuSeconds: {
        workerd: Number(runtimeCpu.toFixed(2)),
        clients: Number(((nodeCpu.user + nodeCpu.system) / 1e6).toFixed(2)),
        wall: Number(elapsed.toFixed(1)),
      },
    };
  } finally {
    for (const c of clients) c.socket.terminate();
    await service.mf.dispose();
  }
  if (asJson) console.log(JSON.stringify(report));
  else {
    const r = report;
    console.log(
      `\n${r.clients} clients, ${r.updatesPerSecond} updates/s and ${r.tradesPerSecond} trades/s for ${r.seconds} s: last sequence ${r.lastSequence}; clients behind it ${r.lostClients}, gaps ${r.gaps}, bad checksums ${r.badChecksums}, re-snapshots ${r.resnapshots}, books ≠ REST ${r.notEqualRest}; trades missing ${r.tradesMissing}, trade gaps ${r.tradeGaps}`,
    );
    if (r.others.markets > 0)
      console.log(
        `meanwhile ${r.others.markets} other markets on the same publisher connection: ${r.others.updatesPerSecond} updates/s in all; markets whose book is not at its last sequence: ${r.others.notAllStored}`,
      );
    console.log(
      `${r.messagesPerSecond} messages/s delivered; per client per stream: book ${r.perClientPerSecond.book}/s, trades ${r.perClientPerSecond.trades}/s (target ≤ 10); ingest→delivery p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms (target p99 ≤ 150)`,
    );
    console.log(
      `workerd CPU per delivered message: service ${r.cpuUsPerMessage.service} µs, floor ${r.cpuUsPerMessage.floor} µs: ${r.cpuUsPerMessage.ratio}× (target ≤ 1.5×)`,
    );
    console.log(`workerd RSS: ${r.runtimeRssMiB.beforeClients} MiB idle, ${r.runtimeRssMiB.withClients} MiB with ${r.clients} clients`);
    console.log(`CPU during the run: workerd ${r.cpuSeconds.workerd} s, the clients ${r.cpuSeconds.clients} s, in ${r.cpuSeconds.wall} s (2 cores shared)`);
  }
  const clean =
    report.others.notAllStored === 0 &&
    report.lostClients === 0 &&
    report.gaps === 0 &&
    report.badChecksums === 0 &&
    report.notEqualRest === 0 &&
    report.tradesMissing === 0 &&
    report.tradeGaps === 0;
  process.exitCode = clean ? 0 : 1;
}

if (isMainThread && args.includes("--markets")) {
  const { measurePlacement } = await import("./ws-venue.mjs");
  const report = await measurePlacement({ clients: CLIENTS, markets: Number(option("markets", 2000)), seconds: SECONDS, log });
  if (asJson) console.log(JSON.stringify(report));
  else
    console.log(
      `${report.clients} clients over ${report.markets} markets: relay→shard calls ${report.relayShardCallsPerSecond}/s placed by group (target ≤ ${report.target}: 2 × ${report.groupsWithSubscribedChangedMarkets} groups × 20 ticks), ${report.relayShardCallsPerSecondByPrincipal}/s placed by principal; shards per relay ${report.shardsPerRelay} by group, ${report.shardsPerRelayByPrincipal} by principal; updates applied ${report.updatesPerSecond}/s and ${report.updatesPerSecondByPrincipal}/s`,
    );
  process.exit(report.relayShardCallsPerSecond <= report.target ? 0 : 1);
} else if (isMainThread && args.includes("--restart")) {
  const { measureRestart, TARGET_SECONDS } = await import("./ws-restart.mjs");
  const restart = await measureRestart({ clients: CLIENTS, log, checksum, sorted });
  if (asJson) console.log(JSON.stringify({ restart }));
  else
    console.log(
      `restart with ${restart.clients} clients (${restart.binanceClients} Binance-dialect): runtime back in ${restart.restartSeconds} s; ${restart.backInSync} back in sync, the last ${restart.seconds} s after the kill (p50 ${restart.p50Seconds} s); gave up ${restart.gaveUp}; the storm's requests ${restart.requests} (upgrades ${restart.upgrades}, REST snapshots ${restart.restSnapshots}), 429s ${restart.rateLimited}, refused upgrades ${restart.refusedUpgrades}, stream snapshots ${restart.streamSnapshots}; books ≠ REST at the end ${restart.notEqualRest}`,
    );
  const met = restart.gaveUp === 0 && restart.seconds <= TARGET_SECONDS && restart.rateLimited <= restart.requests / 100 && restart.notEqualRest === 0;
  process.exit(met ? 0 : 1);
} else if (isMainThread && args.includes("--announce")) {
  const { measureAnnouncement } = await import("./ws-announce.mjs");
  const report = await measureAnnouncement({ clients: CLIENTS, log, connectAll });
  if (asJson) console.log(JSON.stringify(report));
  else
    console.log(
      `announcement to ${report.clients} clients: answered in ${report.answeredMs} ms; received by ${report.received} (p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, slowest ${report.maxMs} ms); ${report.missing} missing within ${report.targetMs} ms: ${report.missing === 0 && report.maxMs <= report.targetMs ? "met" : "MISSED"}`,
    );
  process.exit(report.missing === 0 ? 0 : 1);
} else if (isMainThread && SOAK !== undefined) {
  const { soak } = await import("./ws-soak.mjs");
  const report = await soak(SOAK, { base: option("base"), asJson });
  process.exit(report.drops > 0 ? 1 : 0);
} else if (isMainThread) await main();
else await publisherMain();
