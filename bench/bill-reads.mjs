// The whole bill's read and subscriber phases (bench/whole-bill.mjs): REST, signed REST and
// Binance's WebSocket API at a slice of the venue's rates, and stream connections opened, held
// across the shards' key checks and closed — each counted from the service's metrics.
import WebSocket from "ws";
import { billedIn, counted } from "./bill-counts.mjs";
import { VENUE_LOAD } from "./bill-price.mjs";
import { createKey, sign, signUp } from "./signed-load.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Public reads, as a venue's are: the service's routes and Binance's, a market each from `markets`. */
const PUBLIC_ROUTES = [
  [0.2, (m) => `/api/ticker/${m}`],
  [0.2, (m) => `/api/orderbook/${m}?depth=20`],
  [0.1, (m) => `/api/trades/${m}`],
  [0.1, (m) => `/api/klines/${m}?interval=1m`],
  [0.1, (m) => `/api/book-ticker/${m}`],
  [0.05, () => "/api/prices"],
  [0.1, (m) => `/binance/api/v3/ticker/price?symbol=${m}`],
  [0.1, (m) => `/binance/api/v3/depth?symbol=${m}&limit=20`],
  [0.05, (m) => `/binance/api/v3/klines?symbol=${m}&interval=1m&limit=60`],
];
const SIGNED_ROUTES = [(m) => `/v1/ticker/24hr?symbol=${m}`, (m) => `/v1/orderbook?symbol=${m}&depth=20`];
const WS_API_METHODS = [(m) => ({ method: "ticker.price", params: { symbol: m } }), (m) => ({ method: "depth", params: { symbol: m, limit: 20 } })];

function pick(routes, r) {
  let acc = 0;
  for (const [weight, route] of routes) {
    acc += weight;
    if (r < acc) return route;
  }
  return routes[routes.length - 1][1];
}

/** Accounts and keys through the account API (20 a account): `{ id, secret, cookie }` each, with `permissions`. */
export async function makeKeys(url, count, permissions, ipBase, keep = () => true) {
  const keys = [];
  let n = 0;
  const ip = () => `${ipBase}.${(n++ % 250) + 1}`;
  for (let a = 0; keys.length < count; a++) {
    const cookie = await signUp(url, `bench-all-${Date.now().toString(36)}-${a}@example.com`, ip());
    for (let k = 0; k < 20 && keys.length < count; k++) {
      const key = { ...(await createKey(url, cookie, `bench all ${a}.${k}`, permissions, ip())), cookie };
      if (keep(key)) keys.push(key);
    }
  }
  return keys;
}

/**
 * The number of `keyId`'s usage ledger, which names its key gate (`gate:{n}`): FNV-1a of the id
 * modulo 32, as src/core/object-ids.ts `usageLedgerOf` computes it.
 */
export function keyLedger(keyId) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < keyId.length; i++) hash = Math.imul(hash ^ keyId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % 32;
}

/** An isolate's Analytics Engine window (POINT_WINDOW_MS, src/metrics/request-events.ts). */
const POINT_WINDOW_MS = 25_000;

/** A read's status as the read phase keeps it (`200`, `"ws 429"`, `"error"`) is a 2xx answer. */
export function answeredOk(status) {
  return /^(ws )?2/.test(String(status));
}

/**
 * The read phase: `rate` public requests a second from `addresses` addresses (each at the venue's
 * 0.2 a second), `signedRate` signed over `keys`, `wsRate` Binance WebSocket API requests over eight
 * connections, for `seconds`, over `markets` (uniform: the venue's reads reach every market).
 * The counted window opens and closes on a pause of the load longer than the holders' hand-over
 * (`flushMs`, METRICS_FLUSH_MS) and an Analytics Engine window: what the warm-up counted is handed on before the window opens, and
 * what the window counted before it closes, so no count falls on the wrong side of a scrape.
 */
export async function readPhase(service, token, { markets, keys, rate, signedRate, wsRate, warm, seconds, flushMs }) {
  const { url } = service;
  const addresses = Math.round(rate / (VENUE_LOAD.publicPerSecond / VENUE_LOAD.addresses));
  const statuses = {};
  // The counted window's answers apart (the bench is judged on them: the warm-up takes each key's and
  // market's first use), and when the answers that were not 2xx came, in 5 s bins from the start.
  const windowStatuses = {};
  const notOkAt = {};
  const began = performance.now();
  const answered = (status, inWindow = counting) => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (inWindow) windowStatuses[status] = (windowStatuses[status] ?? 0) + 1;
    if (!answeredOk(status)) {
      const bin = Math.floor((performance.now() - began) / 5000) * 5;
      notOkAt[bin] = (notOkAt[bin] ?? 0) + 1;
    }
  };
  const wsUrl = `${url.replace(/^http/, "ws")}/binance/ws-api/v3`;
  const sockets = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) =>
        new Promise((resolve, reject) => {
          const ws = new WebSocket(wsUrl, { headers: { "CF-Connecting-IP": `10.86.0.${i + 1}` } });
          ws.once("open", () => resolve(ws));
          ws.once("error", reject);
          ws.on("message", (data) => {
            const answer = JSON.parse(String(data));
            answered(`ws ${answer.status}`);
            if (answer.status === 429 && !statuses.firstRefusal) statuses.firstRefusal = answer.error;
          });
        }),
    ),
  );
  let sent = { public: 0, signed: 0, signedUnauthenticated: 0, ws: 0 };
  // Every signed request of the phase, warm-up included, and those refused before their key's
  // holder counted them: what the keys' usage must add up to (`countsComplete`).
  const signedAll = { sent: 0, unauthenticated: 0 };
  const inFlight = new Set();
  const fire = (promise) => {
    inFlight.add(promise);
    promise.finally(() => inFlight.delete(promise));
  };
  // Sent from the start; counted from `warm` on, when every key has made its first use (its
  // guard's row a day, counted apart) and the ledgers flush every 5 s, their steady state.
  let counting = false;
  let paused = false;
  let stop = false;
  const count = (kind) => {
    if (counting) sent[kind] += 1;
  };
  const driving = (async () => {
    const owed = { public: 0, signed: 0, ws: 0 };
    let n = 0;
    let frames = 0;
    while (!stop) {
      if (paused) {
        await sleep(20);
        continue;
      }
      owed.public += rate / 50;
      owed.signed += signedRate / 50;
      owed.ws += wsRate / 50;
      for (; owed.public >= 1; owed.public -= 1, n++) {
        const m = markets[Math.floor(Math.random() * markets.length)];
        const path = pick(PUBLIC_ROUTES, Math.random())(m);
        const ip = `10.${90 + Math.floor((n % addresses) / 62_500)}.${Math.floor(((n % addresses) % 62_500) / 250)}.${((n % addresses) % 250) + 1}`;
        const inWindow = counting;
        count("public");
        fire(
          fetch(url + path, { headers: { "CF-Connecting-IP": ip } }).then(
            async (r) => {
              await r.arrayBuffer();
              answered(r.status, inWindow);
            },
            () => answered("error", inWindow),
          ),
        );
      }
      for (; owed.signed >= 1; owed.signed -= 1, n++) {
        const key = keys[n % keys.length];
        const m = markets[n % markets.length];
        const target = SIGNED_ROUTES[n % SIGNED_ROUTES.length](m);
        const timestamp = String(Date.now());
        const inWindow = counting;
        count("signed");
        signedAll.sent += 1;
        fire(
          fetch(url + target, {
            headers: {
              "X-API-KEY": key.id,
              "X-TIMESTAMP": timestamp,
              "X-SIGNATURE": sign(key.secret, timestamp, "GET", target),
              "CF-Connecting-IP": "10.87.0.1",
            },
          }).then(
            async (r) => {
              await r.arrayBuffer();
              answered(r.status, inWindow);
              // Refused before its key's guard admitted it (a timestamp out of its window when this
              // machine stalls): no ledger hears of it, so `countsComplete` leaves it out.
              if (r.status === 401 || r.status === 403) {
                signedAll.unauthenticated += 1;
                if (inWindow) sent.signedUnauthenticated += 1;
              }
            },
            () => answered("error", inWindow),
          ),
        );
      }
      for (; owed.ws >= 1; owed.ws -= 1, n++) {
        const m = markets[Math.floor(Math.random() * markets.length)];
        // Each connection in turn: 10 frames a second is a connection's limit.
        sockets[frames % sockets.length].send(JSON.stringify({ id: `r${n}`, ...WS_API_METHODS[frames % WS_API_METHODS.length](m) }));
        frames += 1;
        count("ws");
      }
      await sleep(20);
    }
  })();
  // Every count handed on after the requests are answered: a hand-over's wait, or an Analytics
  // Engine window's (its timer writes the points and hands their count on), and a second to spare.
  const handOverMs = Math.max(flushMs, POINT_WINDOW_MS) + 1_000;
  const handedOn = () => sleep(handOverMs);
  // The warm-up counted apart: each key's first use (its guard's once-a-day row) falls in it.
  const warmWindow = await counted(service, token, async () => {
    await sleep(warm * 1000);
    paused = true;
    await Promise.all(inFlight);
    await keptWarm(url, markets, handOverMs);
  });
  let loadSeconds = 0;
  let loadCpuSeconds = 0;
  const window = await counted(service, token, async () => {
    const started = performance.now();
    const cpu = service.cpuSeconds();
    counting = true;
    paused = false;
    await sleep(seconds * 1000);
    counting = false;
    stop = true;
    await driving;
    await Promise.all(inFlight);
    loadSeconds = (performance.now() - started) / 1000;
    loadCpuSeconds = service.cpuSeconds() - cpu;
    await handedOn();
  });
  for (const ws of sockets) ws.close();
  sent = { ...sent, addresses };
  // Read after the window closed (its counts are not the bill's): what the keys' usage counted.
  const usageCounted = await usageOf(url, keys);
  const billed = billedIn(window.grown);
  const warmBilled = billedIn(warmWindow.grown);
  const guardRows = (warmBilled.rowsWrittenBy.guard ?? 0) + (billed.rowsWrittenBy.guard ?? 0);
  // Rates and CPU are the load's: the pause that closes the window sent nothing, and its CPU (the
  // hosts' own background) is not the reads'.
  return {
    ...window,
    seconds: loadSeconds,
    cpuSeconds: loadCpuSeconds,
    grown: undefined,
    billed,
    sent,
    statuses,
    windowStatuses,
    notOkAt,
    keys: keys.length,
    guardRows,
    // The warm-up's guard calls: each key's first use at its gate (its record read, its last use told).
    warmGuardCalls: warmBilled.calls.guard ?? 0,
    usage: { counted: usageCounted, taken: signedAll.sent - signedAll.unauthenticated },
  };
}

/** The requests the keys' usage counted, summed over `keys` (their accounts' usage API, an address each). */
async function usageOf(url, keys) {
  let counted = 0;
  for (const [i, key] of keys.entries()) {
    const response = await fetch(`${url}/account/api-keys/${key.id}/usage?interval=1h`, {
      headers: { Cookie: key.cookie, "CF-Connecting-IP": `10.84.${i >> 8}.${(i & 255) + 1}` },
    });
    if (!response.ok) throw new Error(`usage of ${key.id}: ${response.status} ${await response.text()}`);
    counted += (await response.json()).buckets.reduce((sum, b) => sum + b.requests, 0);
  }
  return counted;
}

/**
 * The pause before the counted window, `ms` long, with each market read every 4 s until 6 s before
 * its end (counted in the warm-up, whose counts are not the bill's): at the venue's load the hosts
 * are never idle — publishers write all the time — but here the pause was the only quiet in the
 * run, and a host idle for 10 s may be taken out of memory. Each then loaded its 50 markets again
 * at the first reads of the window (about 4 s of the one thread: docs/capacity.md#a-hosts-restart)
 * and the reads queued behind it past the market's 2 s (503) and signed timestamps past 5 s (401).
 */
async function keptWarm(url, markets, ms) {
  const until = performance.now() + ms;
  while (until - performance.now() > 6_000) {
    await Promise.all(
      markets.map((m, i) =>
        fetch(`${url}/api/ticker/${m}`, { headers: { "CF-Connecting-IP": `10.88.${i >> 8}.${(i & 255) + 1}` } }).then(
          (r) => r.arrayBuffer(),
          () => undefined,
        ),
      ),
    );
    await sleep(4_000);
  }
  await sleep(Math.max(0, until - performance.now()));
}

/**
 * The subscribers' phase: `anonymous` connections on /api/ws and `keyed` on the signed /v1/ws (a
 * key each), each on one market's book and trades; counted as they open, while they are held
 * `seconds` (past two of the shards' key checks), and as they close.
 */
export async function subscriberPhase(service, token, { markets, keys, anonymous, seconds }) {
  const wsBase = service.url.replace(/^http/, "ws");
  const sockets = [];
  const open = (path, ip) =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(wsBase + path, { headers: { "CF-Connecting-IP": ip } });
      ws.once("open", () => resolve(ws));
      ws.once("error", reject);
      ws.on("message", () => {});
      sockets.push(ws);
    });
  const streams = (i) => `book.${markets[i % markets.length]},trades.${markets[i % markets.length]}`;
  const opened = await counted(service, token, async () => {
    const all = [];
    for (let i = 0; i < anonymous; i++) all.push(open(`/api/ws?streams=${streams(i)}`, `10.88.${i >> 8}.${(i & 255) + 1}`));
    for (const [i, key] of keys.entries()) {
      const timestamp = String(Date.now());
      all.push(
        open(
          `/v1/ws?streams=${streams(i)}&apiKey=${key.id}&timestamp=${timestamp}&signature=${sign(key.secret, timestamp, "GET", "/v1/ws")}`,
          `10.89.${i >> 8}.${(i & 255) + 1}`,
        ),
      );
    }
    await Promise.all(all);
    // The shards' first check of a key comes 10 s after its first connection: part of opening.
    await sleep(15_000);
  });
  const held = await counted(service, token, () => sleep(seconds * 1000));
  const closed = await counted(service, token, async () => {
    for (const ws of sockets) ws.close();
    await sleep(2000);
  });
  const connections = anonymous + keys.length;
  return {
    connections,
    keyed: keys.length,
    opened: { ...billedIn(opened.grown), cpuSeconds: opened.cpuSeconds },
    held: { ...billedIn(held.grown), seconds: held.seconds, cpuSeconds: held.cpuSeconds },
    closed: { ...billedIn(closed.grown), cpuSeconds: closed.cpuSeconds },
  };
}
