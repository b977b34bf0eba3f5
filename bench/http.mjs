// `npm run bench [-- --json] [-- --seconds N] [-- --rounds N]`
//
// Runs the service on workerd through Miniflare (not wrangler's logging dev proxy) next to a
// bare Hono Worker (the baseline) in the same runtime, warms both, then loads the routes in
// interleaved rounds at 32 connections and reports medians and each route's ratio to the
// baseline's requests/s. Loopback only; it stops everything it started.
import { mkdirSync } from "node:fs";
import autocannon from "autocannon";
import { bundleBaseline, bundleService, startBaseline, startService, work } from "./service.mjs";
import { prepareSignedLoad } from "./signed-load.mjs";

const args = process.argv.slice(2);
const asJson = args.includes("--json");
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const SECONDS = option("seconds", 4);
const ROUNDS = option("rounds", 3);
const CONNECTIONS = 32;
const log = (...line) => {
  if (!asJson) console.log(...line);
};

/**
 * Client IPs for the load, used round-robin: 512 of them keep each far under the public limit
 * of 10 requests a second up to ~5,000 req/s in all.
 */
const CLIENT_IPS = 512;
let ipCounter = 0;
function nextIp() {
  ipCounter = (ipCounter + 1) % CLIENT_IPS;
  return `10.${20 + (ipCounter >> 8)}.${ipCounter & 255}.7`;
}

function load(url, pathName, setupRequest) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: url + pathName,
        connections: CONNECTIONS,
        duration: SECONDS,
        requests: [{ setupRequest: setupRequest ?? ((request) => ({ ...request, headers: { ...request.headers, "CF-Connecting-IP": nextIp() } })) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main() {
  mkdirSync(work, { recursive: true });
  log("bundling the service and the baseline…");
  const [serviceScript, baselineScript] = [bundleService(asJson), await bundleBaseline()];
  const service = await startService(serviceScript, { DEMO_FEED: "on" });
  const baseline = await startBaseline(baselineScript);
  try {
    // Warm up: the first request starts the demo feed; wait until the book and the prices exist.
    for (let i = 0; i < 60; i++) {
      const prices = await (await fetch(`${service.url}/api/prices`, { headers: { "CF-Connecting-IP": nextIp() } })).json().catch(() => ({}));
      if (prices.data?.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const routes = [
      { name: "baseline", path: "/api/ticker/BTCUSDT", url: baseline.url },
      { name: "ticker", path: "/api/ticker/BTCUSDT", url: service.url },
      { name: "orderbook", path: "/api/orderbook/BTCUSDT?depth=100", url: service.url },
      { name: "prices", path: "/api/prices", url: service.url },
    ];
    const signed = await prepareSignedLoad(service.url, "/v1/ticker/24hr?symbol=BTCUSDT").catch((error) => {
      log(`signed-ticker skipped: ${error.message}`);
      return undefined;
    });
    if (signed) routes.push({ name: "signed-ticker", path: signed.path, url: service.url, setupRequest: signed.setupRequest });

    for (const route of routes) await load(route.url, route.path, route.setupRequest); // warm every path once
    const samples = new Map(routes.map((r) => [r.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const route of routes) {
        const result = await load(route.url, route.path, route.setupRequest);
        const bad = result.non2xx + result.errors + result.timeouts;
        samples.get(route.name).push({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad });
        log(`round ${round} ${route.name.padEnd(13)} ${result.requests.average.toFixed(0).padStart(6)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms${bad ? `  (${bad} non-2xx/errors)` : ""}`);
      }
    }
    const baselineRps = median(samples.get("baseline").map((s) => s.rps));
    const report = routes.map((route) => {
      const runs = samples.get(route.name);
      const rps = median(runs.map((s) => s.rps));
      return {
        name: route.name,
        path: route.path,
        rps: Math.round(rps),
        p50Ms: median(runs.map((s) => s.p50)),
        p99Ms: median(runs.map((s) => s.p99)),
        ratio: Number((rps / baselineRps).toFixed(3)),
        failed: runs.reduce((n, s) => n + s.bad, 0),
      };
    });
    if (asJson) {
      console.log(JSON.stringify({ routes: report.map(({ failed, ...r }) => r), connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS }));
    } else {
      const targets = { ticker: 0.6, orderbook: 0.45, prices: 0.7, "signed-ticker": 0.5 };
      console.log(`\nmedians of ${ROUNDS} interleaved rounds × ${SECONDS} s at ${CONNECTIONS} connections (same workerd, same run):`);
      console.log("route          req/s    p50 ms  p99 ms  ratio  target");
      for (const r of report) {
        const target = targets[r.name];
        const verdict = target === undefined ? "" : `${r.ratio >= target ? "≥" : "<"} ${target.toFixed(2)} ${r.ratio >= target ? "ok" : "MISSED"}`;
        console.log(`${r.name.padEnd(13)} ${String(r.rps).padStart(6)}  ${String(r.p50Ms).padStart(6)}  ${String(r.p99Ms).padStart(6)}  ${r.ratio.toFixed(2).padStart(5)}  ${verdict}${r.failed ? `  (${r.failed} failed)` : ""}`);
      }
    }
  } finally {
    await Promise.allSettled([service.mf.dispose(), baseline.mf.dispose()]);
  }
}

await main();
