// `npm run bench:ws -- --soak 600 [-- --base http://127.0.0.1:8787] [-- --json]`
//
// Keeps stream clients connected for the given seconds while the demo feed runs, and counts every
// connection that ended without the client asking, by close code (docs/streams.md#dropped-connections-1006).
// Per client address (one chosen for each of the general pool's 4 shards of wrangler.toml): a
// native `/api/ws` client on a book and trades, a Binance raw stream (`/binance/ws/<name>`) and a
// Binance combined stream (`/binance/stream?streams=`) — these name markets of the first group, so
// they land on its shard (docs/streams.md#placement) —; plus ccxt.pro `watchOrderBookForSymbols`
// on three markets, as a trading bot runs it. A dropped client reconnects after a second and is
// counted again, so the figure is drops per hour, not whether the first connection survived.
// A client that gets no message for 5 s while connected is counted as stalled (the feed ticks
// several times a second). Beside them, on each general-pool shard, a churner connects, subscribes, and drops
// its TCP connection without a close frame 0.3–1 s later, over and over, as a bot on a flaky
// network does: that is what made workerd 1.20261102 reset a whole shard (docs/streams.md#dropped-connections-1006),
// so the soak keeps doing it. Its own ends are not drops.
//
// Without `--base` the service runs on workerd through Miniflare (bench/service.mjs, its own
// socket, the demo feed on); with it, the soak runs against a service already started
// (`npm start`). Loopback only; stops by itself; exits 1 when any connection dropped.
import ccxt from "ccxt";
import WebSocket from "ws";
import { fnv1a } from "./load.mjs";

const SHARDS = 4; // STREAM_SHARDS in wrangler.toml
const STALL_MS = 5000;

/** As `shardOf` in src/streams/placement.ts: the client addresses below land on every general-pool shard. */
const shardOf = (principal) => fnv1a(principal) % SHARDS;

function addressPerShard() {
  const byShard = new Map();
  for (let i = 1; byShard.size < SHARDS && i < 255; i++) {
    const ip = `10.77.0.${i}`;
    const shard = shardOf(`ip:${ip}`);
    if (!byShard.has(shard)) byShard.set(shard, ip);
  }
  return [...byShard.entries()].sort(([a], [b]) => a - b);
}

/** One client kind kept connected: every close it did not ask for is a drop, by code. */
function keep(name, url, ip, tally, stopped) {
  const open = () => {
    const ws = new WebSocket(url, { headers: { "CF-Connecting-IP": ip } });
    let last = Date.now();
    let stalled = false;
    ws.on("message", () => {
      last = Date.now();
      stalled = false;
    });
    const watch = setInterval(() => {
      if (!stalled && ws.readyState === WebSocket.OPEN && Date.now() - last > STALL_MS) {
        stalled = true;
        tally.stalls.push({ client: name, at: tally.elapsed() });
      }
    }, 1000);
    ws.on("close", (code, reason) => {
      clearInterval(watch);
      if (stopped()) return;
      tally.drop(name, code, String(reason));
      setTimeout(open, 1000);
    });
    ws.on("error", () => {});
    tally.sockets.add(ws);
  };
  open();
}

/** Connects, subscribes and vanishes without a close frame, until stopped; counts the cycles. */
async function churn(url, ip, tally, stopped) {
  while (!stopped()) {
    await new Promise((resolve) => {
      const ws = new WebSocket(url, { headers: { "CF-Connecting-IP": ip } });
      ws.on("open", () => {
        ws.send(JSON.stringify({ method: "SUBSCRIBE", params: ["btcusdt@depth@100ms", "ethusdt@depth@100ms", "solusdt@depth@100ms"], id: 1 }));
        setTimeout(() => ws.terminate(), 300 + Math.random() * 700);
      });
      ws.on("close", () => {
        tally.churned += 1;
        resolve();
      });
      ws.on("error", () => {});
    });
  }
}

async function keepCcxt(base, tally, stopped) {
  const exchange = new ccxt.pro.binance({
    urls: { api: { public: `${base}/binance/api/v3`, ws: { spot: `${base.replace("http", "ws")}/binance/ws` } } },
    options: { fetchMarkets: { types: ["spot"] } },
  });
  await exchange.loadHttpProxyAgent();
  tally.closers.push(() => exchange.close());
  while (!stopped()) {
    try {
      await exchange.watchOrderBookForSymbols(["BTC/USDT", "ETH/USDT", "SOL/USDT"]);
    } catch (error) {
      if (stopped()) break;
      const code = /closing code (\d+)/.exec(String(error?.message))?.[1] ?? error?.constructor?.name ?? "error";
      tally.drop("ccxt.pro", code, String(error?.message).slice(0, 120));
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export async function soak(seconds, { base: given, asJson = false } = {}) {
  const log = (...line) => {
    if (!asJson) console.log(...line);
  };
  let service;
  let base = given;
  if (!base) {
    const { bundleService, startService } = await import("./service.mjs");
    service = await startService(bundleService(asJson), { DEMO_FEED: "on" }, { direct: true });
    base = service.url.replace(/\/$/, "");
    // The demo feed starts with the first request.
    await fetch(`${base}/api/time`);
  }
  const started = Date.now();
  const tally = {
    drops: [],
    stalls: [],
    churned: 0,
    sockets: new Set(),
    closers: [],
    elapsed: () => Number(((Date.now() - started) / 1000).toFixed(1)),
    drop(client, code, reason) {
      this.drops.push({ client, code: String(code), reason, at: this.elapsed() });
      log(`${this.elapsed()} s: ${client} dropped, code ${code}${reason ? ` (${reason})` : ""}`);
    },
  };
  let done = false;
  const stopped = () => done;
  const wsBase = base.replace("http", "ws");
  const placed = addressPerShard();
  log(
    `soaking ${seconds} s against ${base}: ${placed.length * 3 + 1} clients (${placed.map(([s, ip]) => `shard-${s} ${ip}`).join(", ")}; ccxt.pro), and a churner per shard`,
  );
  for (const [shard, ip] of placed) {
    keep(`native shard-${shard}`, `${wsBase}/api/ws?streams=book.BTCUSDT,trades.BTCUSDT`, ip, tally, stopped);
    keep(`binance raw shard-${shard}`, `${wsBase}/binance/ws/ethusdt@depth@100ms`, ip, tally, stopped);
    keep(`binance combined shard-${shard}`, `${wsBase}/binance/stream?streams=solusdt@trade/btcusdt@bookTicker`, ip, tally, stopped);
  }
  const churners = placed.map(([, ip]) => churn(`${wsBase}/binance/ws`, ip, tally, stopped));
  const ccxtRun = keepCcxt(base, tally, stopped).catch((error) => tally.drop("ccxt.pro", "setup", String(error?.message)));
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  done = true;
  for (const ws of tally.sockets) ws.terminate();
  await Promise.allSettled(tally.closers.map((close) => close()));
  await Promise.race([Promise.all([ccxtRun, ...churners]), new Promise((resolve) => setTimeout(resolve, 2000))]);
  if (service) await service.mf.dispose();

  const byCode = {};
  for (const drop of tally.drops) byCode[drop.code] = (byCode[drop.code] ?? 0) + 1;
  const hours = seconds / 3600;
  const report = {
    seconds,
    base: given ?? "bench service (workerd via Miniflare, own socket)",
    clients: placed.length * 3 + 1,
    shards: placed.length,
    drops: tally.drops.length,
    dropsPerHour: Number((tally.drops.length / hours).toFixed(1)),
    dropsPerHourByCode: Object.fromEntries(Object.entries(byCode).map(([code, n]) => [code, Number((n / hours).toFixed(1))])),
    stalls: tally.stalls.length,
    churnedConnections: tally.churned,
    events: tally.drops,
  };
  if (asJson) console.log(JSON.stringify(report, null, 2));
  else {
    log(`\n${report.drops} drops in ${seconds} s (${report.dropsPerHour} an hour) over ${report.clients} clients on ${report.shards} shards`);
    for (const [code, perHour] of Object.entries(report.dropsPerHourByCode)) log(`  code ${code}: ${perHour} an hour`);
    log(`  stalls (no message for ${STALL_MS / 1000} s while connected): ${report.stalls}`);
    log(`  churned connections (subscribed, then gone without a close frame): ${report.churnedConnections}`);
  }
  return report;
}
