// `npm run bench [-- --json] [-- --direct] [-- --with-assets] [-- --seconds N] [-- --rounds N] [-- --script bundle.js] [-- --only flood,ticker] [-- --markets 2000]`
//
// Runs the service on workerd through Miniflare's API — the bundle `wrangler deploy --dry-run`
// makes, the bindings of wrangler.toml, D1 migrations applied, the demo feed on — not through
// `wrangler dev` and its logging proxy. Next to it, in the same runtime and built by the same
// bundler: the baseline (a bare Hono Worker answering a small JSON body) and the floor (the
// baseline plus one or two calls per request to a trivial Durable Object, or with the headers
// every answer of the service must carry and no call); and, as a third
// reference, the service's own `GET /api/time` (its public path with no work of its own). After warming up it
// loads every route in interleaved rounds at 32 connections, each run from the same warm state
// (every client address's object touched, then a 1 s re-warm), and reports medians, each route's
// ratio to the baseline's requests/s (median of the per-round ratios), its Durable Object
// calls per 1,000 requests, counted by the Worker itself, and the CPU time its workerd process
// used per request (from /proc: the Worker, its objects and the demo feed together, so it does
// not move with the other load on the machine as requests/s does). `flood` sends from one
// address far over its limit (its 429s are expected).
//
// Requests reach each Worker through Miniflare's entry worker (its standard serving path, with
// request logging off); `--direct` serves each on its own workerd socket instead. The service
// runs without Miniflare's local emulation of Workers Static Assets, as Cloudflare invokes a
// Worker for a path that matches no asset; `--with-assets` puts the emulation back in front
// (docs/benchmarks.md says what it costs). `--script` measures an already built bundle instead of this
// tree's (for studying a change to src/). Loopback only; it stops everything it started.
// `--markets N` lists a generated venue through the operator API before the run, so the service
// holds N markets (the seven defaults among them), and afterwards measures the shared objects'
// calls under synthetic publishing: a second service, started after the first has stopped, with
// the demo feed publishing every one of the N markets and WebSocket clients subscribed across
// the shards (`publishing` in the output and the JSON).
// `--metrics off` runs the service with its operator metrics off (METRICS=off); `--compare-metrics`
// runs a second service with them off beside the first and loads its ticker and order book in
// the same rounds (`ticker-nometrics`, `orderbook-nometrics`), so what the metrics cost is a
// difference of ratios in one run (docs/operations.md#metrics); metrics/1k counts the calls into
// the Metrics object.
// `--json` prints one JSON object on the last line of stdout: {"routes": [...], "references": [...], "publishing"?: {...}}.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { listVenue } from "../scripts/venue.mjs";
import { importHistory } from "../scripts/venue-history.mjs";
import { CONNECTIONS, clientIps, fromManyIps, fromOneIp, load, median, option, touchClients, warmUp } from "./load.mjs";
import { measurePublishing } from "./publishing.mjs";
import { bundleBaseline, bundleFloor, bundleService, startReference, startService, work } from "./service.mjs";
import { prepareSignedLoad } from "./signed-load.mjs";

const args = process.argv.slice(2);
const asJson = args.includes("--json");
const direct = args.includes("--direct");
const withAssets = args.includes("--with-assets");
const SECONDS = Number(option("seconds", 2));
const ROUNDS = Number(option("rounds", 7));
const SCRIPT = option("script", undefined);
/** Only these routes (and the baseline), for studying one change: `--only flood,limiter-only`. */
const ONLY = option("only", undefined)?.split(",");
/** Markets the service holds: the seven defaults, or N with a generated venue listed before the run. */
const MARKETS = Math.max(7, Number(option("markets", 7)));
const WARM_SECONDS = 1;
/** `--metrics off`: the service counts nothing; `--compare-metrics`: a twin without metrics in the same rounds. */
const METRICS = option("metrics", "on");
const COMPARE_METRICS = args.includes("--compare-metrics");
/** The ticker and order-book ratios with metrics stay within this of the same routes without them. */
const METRICS_SLACK = 0.03;
const TARGETS = { ticker: 0.65, orderbook: 0.55, prices: 0.65, "signed-ticker": 0.5, flood: 0.85, "tickers-all": 0.4 };
/** `book-ticker` is held to the ticker's own ratio in the same run, less this. */
const BOOK_TICKER_SLACK = 0.05;
/** The klines routes over an imported year are held to this share of the ticker's ratio in the same run (docs/history.md). */
const KLINES_SHARE = 0.8;
/** Market calls per 1,000 requests the edge read path may make on these routes (docs/edge-reads.md). */
const MARKET_CALL_TARGETS = {
  ticker: 5,
  orderbook: 5,
  "tickers-all": 20,
  "book-ticker-all": 20,
  markets: 20,
  prices: 20,
  "binance-ticker": 5,
  "binance-depth": 5,
  "binance-tickers-all": 20,
  // One object call per request at most (issue: candles over a year): the edge copies make it far fewer.
  "klines-1d": 1000,
  "klines-1w": 1000,
  "klines-1m-year": 1000,
};
const ADMIN = { Authorization: "Bearer bench-admin-token", "CF-Connecting-IP": "10.250.0.1" };
const log = (...line) => {
  if (!asJson) console.log(...line);
};

async function main() {
  const startedAt = Date.now();
  mkdirSync(work, { recursive: true });
  log(`bundling the service, the baseline and the floor with wrangler (deploy --dry-run)…`);
  const serviceScript = SCRIPT ? path.resolve(SCRIPT) : bundleService(asJson);
  const [baselineBundle, floorBundle] = [bundleBaseline(asJson), bundleFloor(asJson)];
  // Everything started is stopped on the way out, also on Ctrl-C.
  const started = [];
  const stopAll = () => Promise.allSettled(started.map((worker) => worker.mf.dispose()));
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void stopAll().then(() => process.exit(130)));
  try {
    const service = await startService(serviceScript, { DEMO_FEED: "on", METRICS }, { direct, assets: withAssets });
    started.push(service);
    const twin = COMPARE_METRICS ? await startService(serviceScript, { DEMO_FEED: "on", METRICS: "off" }, { direct, assets: withAssets }) : undefined;
    if (twin) started.push(twin);
    const baseline = await startReference(baselineBundle, { direct });
    started.push(baseline);
    const floor = await startReference(floorBundle, { direct });
    started.push(floor);
    const nextIp = clientIps();
    if (MARKETS > 7) await listGeneratedVenue(service.url);
    // A year of BTCUSDT's minutes, as `npm run venue -- --history 365` imports it, for the klines routes.
    const history =
      ONLY && !ONLY.some((name) => name.startsWith("klines-"))
        ? undefined
        : await importHistory({ url: service.url, token: "bench-admin-token", days: 365, symbols: ["BTCUSDT"] });
    const yearAgo = history?.[0]?.from ?? 0;
    log("warming up: demo feed, 1,024 client addresses, 160 API keys…");
    // The first request starts the demo feed; wait until prices, a traded ticker and a book exist.
    await warmUp(service.url, nextIp);
    await touchClients(service.url, nextIp);
    if (twin) {
      await warmUp(twin.url, nextIp);
      await touchClients(twin.url, nextIp);
    }
    await touchClients(floor.url, nextIp, 1024, "/rpc1");
    const signed = await prepareSignedLoad(service.url, "/v1/ticker/24hr?symbol=BTCUSDT", nextIp);
    const publicLoad = fromManyIps(nextIp);
    // Durable Object calls counted by each Worker itself (the service's operator counters; the
    // floor's own), read around every measured run: calls per 1,000 requests, not estimates.
    const callsOf = (worker) => async () => {
      const { objectCalls } = await (await fetch(`${worker.url}/admin/isolate`, { headers: ADMIN })).json();
      // The read path's calls: to market objects, and to the price index for the all-market answers.
      return {
        market: objectCalls.marketReads + objectCalls.venueReads,
        guard: objectCalls.guard + (objectCalls.gate ?? 0),
        metrics: objectCalls.metrics ?? 0,
      };
    };
    const serviceCalls = callsOf(service);
    const floorCalls = async () => (await fetch(`${floor.url}/calls`)).json();
    const noCalls = async () => ({ market: 0, guard: 0, metrics: 0 });
    const allRoutes = [
      { name: "baseline", path: "/api/ticker/BTCUSDT", worker: baseline, setupRequest: publicLoad, calls: noCalls },
      { name: "ticker", path: "/api/ticker/BTCUSDT", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "orderbook", path: "/api/orderbook/BTCUSDT?depth=100", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "prices", path: "/api/prices", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "book-ticker", path: "/api/book-ticker/BTCUSDT", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      // Every market's ticker in one call (one request against the limit).
      { name: "tickers-all", path: "/api/ticker", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "book-ticker-all", path: "/api/book-ticker", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "markets", path: "/api/markets", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "signed-ticker", path: signed.path, worker: service, setupRequest: signed.setupRequest, calls: serviceCalls, signed: true },
      // The Binance dialect (docs/binance.md): the same reads, translated; next to ticker, orderbook and tickers-all.
      { name: "binance-ticker", path: "/binance/api/v3/ticker/24hr?symbol=BTCUSDT", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "binance-depth", path: "/binance/api/v3/depth?symbol=BTCUSDT&limit=100", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "binance-tickers-all", path: "/binance/api/v3/ticker/24hr", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      // Candles over the imported year: daily, weekly (from day buckets) and a year-old page of minutes.
      { name: "klines-1d", path: "/api/klines/BTCUSDT?interval=1d&limit=1000", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "klines-1w", path: "/api/klines/BTCUSDT?interval=1w", worker: service, setupRequest: publicLoad, calls: serviceCalls },
      { name: "klines-1m-year", path: `/api/klines/BTCUSDT?interval=1m&startTime=${yearAgo}`, worker: service, setupRequest: publicLoad, calls: serviceCalls },
      // One client address far over its limit: after its first refusal every request is a 429
      // that the isolate gives by itself until the guard's reset.
      { name: "flood", path: "/api/ticker/BTCUSDT", worker: service, setupRequest: fromOneIp("10.251.0.1"), calls: serviceCalls, refusals: true },
      // References, not targets: what one or two trivial Durable Object calls per request cost here.
      { name: "floor-1rpc", path: "/rpc1", worker: floor, setupRequest: publicLoad, reference: true, calls: floorCalls },
      { name: "floor-2rpc", path: "/rpc2", worker: floor, setupRequest: publicLoad, reference: true, calls: floorCalls },
      // What the headers every answer carries cost here, with no call: no route can go below it.
      { name: "floor-headers", path: "/headers", worker: floor, setupRequest: publicLoad, reference: true, calls: floorCalls },
      // The service's public chain (routing, request id, limiter, headers) around no work at all.
      { name: "limiter-only", path: "/api/time", worker: service, setupRequest: publicLoad, reference: true, calls: serviceCalls },
      ...(twin
        ? [
            { name: "ticker-nometrics", path: "/api/ticker/BTCUSDT", worker: twin, setupRequest: publicLoad, calls: callsOf(twin) },
            { name: "orderbook-nometrics", path: "/api/orderbook/BTCUSDT?depth=100", worker: twin, setupRequest: publicLoad, calls: callsOf(twin) },
          ]
        : []),
    ];
    const routes = allRoutes.filter((route) => !ONLY || route.name === "baseline" || ONLY.includes(route.name));
    const run = (route, seconds) => load({ url: route.worker.url + route.path, seconds, setupRequest: route.setupRequest });
    for (const route of routes) await run(route, 2); // every path once: code optimised, objects warm

    const samples = new Map(routes.map((r) => [r.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round so no route always follows the same neighbour.
      for (let i = 0; i < routes.length; i++) {
        const route = routes[(i + round) % routes.length];
        // workerd evicts a Durable Object ~10 s after its last request, and this Worker sat idle
        // while the others were loaded: every run starts from the same warm state — each of the
        // 1,024 client addresses' objects touched through this route, then a second of load.
        if (!route.signed) await touchClients(route.worker.url, nextIp, 1024, route.path);
        await run(route, WARM_SECONDS);
        const before = await route.calls();
        const cpuBefore = route.worker.cpuSeconds();
        const result = await run(route, SECONDS);
        const cpuAfter = route.worker.cpuSeconds();
        const after = await route.calls();
        const served = result.requests.total;
        const perThousand = (n) => (served > 0 ? Number(((n * 1000) / served).toFixed(1)) : 0);
        // A flood is meant to be refused: what fails there is an answer other than 200 or 429.
        const failed = route.refusals
          ? result.errors + result.timeouts + countOther(result.statusCodeStats, ["200", "429"])
          : result.non2xx + result.errors + result.timeouts;
        samples.get(route.name).push({
          rps: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          failed,
          marketCallsPer1k: perThousand(after.market - before.market),
          guardCallsPer1k: perThousand(after.guard - before.guard),
          metricsCallsPer1k: perThousand((after.metrics ?? 0) - (before.metrics ?? 0)),
          cpuUsPerRequest: cpuBefore === undefined || served === 0 ? null : Math.round(((cpuAfter - cpuBefore) * 1e6) / served),
        });
        log(
          `round ${round + 1} ${route.name.padEnd(14)} ${result.requests.average.toFixed(0).padStart(6)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms${failed ? `  (${failed} failed: ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors, ${result.timeouts} timeouts)` : ""}`,
        );
      }
    }
    // A route's ratio is the median over rounds of its requests/s over the baseline's in the same
    // round: the other processes on this machine come and go, and a round is ~20 s long.
    const baselineByRound = samples.get("baseline").map((s) => s.rps);
    const report = routes.map((route) => {
      const runs = samples.get(route.name);
      const rps = median(runs.map((s) => s.rps));
      return {
        name: route.name,
        path: route.path,
        rps: Math.round(rps),
        p50Ms: median(runs.map((s) => s.p50)),
        p99Ms: median(runs.map((s) => s.p99)),
        ratio: Number(median(runs.map((s, round) => s.rps / baselineByRound[round])).toFixed(2)),
        marketCallsPer1k: median(runs.map((s) => s.marketCallsPer1k)),
        guardCallsPer1k: median(runs.map((s) => s.guardCallsPer1k)),
        metricsCallsPer1k: median(runs.map((s) => s.metricsCallsPer1k)),
        cpuUsPerRequest: runs[0].cpuUsPerRequest === null ? null : median(runs.map((s) => s.cpuUsPerRequest)),
        failed: runs.reduce((n, s) => n + s.failed, 0),
        reference: route.reference === true,
      };
    });
    const failed = report.reduce((n, r) => n + r.failed, 0);
    // The shared objects under publishing: a second service, never beside the first.
    await stopAll();
    started.length = 0;
    const publishing = MARKETS > 7 ? await measurePublishing(serviceScript, { markets: MARKETS, direct, log, listVenue: listGeneratedVenue }) : undefined;
    if (asJson) {
      const shape = ({ failed, reference, ...r }) => r;
      console.log(
        JSON.stringify({
          markets: MARKETS,
          routes: report.filter((r) => !r.reference).map(shape),
          references: report.filter((r) => r.reference).map(shape),
          publishing,
        }),
      );
    } else {
      const seconds = Math.round((Date.now() - startedAt) / 1000);
      console.log(
        `\nmedians of ${ROUNDS} interleaved rounds × ${SECONDS} s (ratio: median of per-round ratios) at ${CONNECTIONS} connections, one workerd per Worker, ${direct ? "direct sockets" : "through Miniflare's entry worker"}${withAssets ? ", the service behind the local Static Assets emulation" : ""} (${seconds} s in all):`,
      );
      console.log(`${MARKETS} markets; market/1k: calls into market objects or the price index by the read path, per 1,000 requests`);
      console.log("route            req/s  p50 ms  p99 ms  market/1k  guard/1k  cpu µs  ratio  target");
      for (const r of report) {
        if (r.name === "floor-1rpc")
          console.log(
            "references (the runtime's cost of Durable Object calls and of the answers' headers, and the service's public path with no work; no target):",
          );
        const tickerRatio = report.find((t) => t.name === "ticker")?.ratio;
        const relative =
          tickerRatio === undefined
            ? undefined
            : r.name === "book-ticker"
              ? tickerRatio - BOOK_TICKER_SLACK
              : r.name.startsWith("klines-")
                ? tickerRatio * KLINES_SHARE
                : undefined;
        const target = relative !== undefined ? Number(relative.toFixed(2)) : TARGETS[r.name];
        const callTarget = MARKET_CALL_TARGETS[r.name];
        const verdict = target === undefined ? "" : `${r.ratio >= target ? "≥" : "<"} ${target.toFixed(2)}  ${r.ratio >= target ? "met" : "MISSED"}`;
        const callVerdict = callTarget === undefined ? "" : `; market calls ≤ ${callTarget}/1k ${r.marketCallsPer1k <= callTarget ? "met" : "MISSED"}`;
        console.log(
          `${r.name.padEnd(14)} ${String(r.rps).padStart(7)}  ${String(r.p50Ms).padStart(6)}  ${String(r.p99Ms).padStart(6)}  ${String(r.marketCallsPer1k).padStart(9)}  ${String(r.guardCallsPer1k).padStart(8)}  ${String(r.cpuUsPerRequest ?? "–").padStart(6)}  ${r.ratio.toFixed(2).padStart(5)}  ${verdict}${callVerdict}${r.failed ? `  (${r.failed} failed)` : ""}`,
        );
      }
    }
    if (!asJson) {
      const ratioOf = (name) => report.find((r) => r.name === name);
      const metricsCalls = ratioOf("ticker")?.metricsCallsPer1k;
      if (metricsCalls !== undefined)
        console.log(`\nmetrics: ${metricsCalls} calls into the Metrics object per 1,000 ticker requests (at most 1: ${metricsCalls <= 1 ? "met" : "MISSED"})`);
      for (const name of ["ticker", "orderbook"]) {
        const on = ratioOf(name);
        const off = ratioOf(`${name}-nometrics`);
        if (!on || !off) continue;
        const gap = Number((off.ratio - on.ratio).toFixed(2));
        console.log(
          `metrics: ${name} ratio ${on.ratio.toFixed(2)} with, ${off.ratio.toFixed(2)} without: ${gap <= METRICS_SLACK ? "within" : "MORE than"} ${METRICS_SLACK} (${gap})`,
        );
      }
    }
    if (publishing && !asJson) {
      const p = publishing;
      console.log(
        `\npublishing: ${p.markets} markets, the demo feed publishing all of them, ${p.subscribers} WebSocket clients on ${p.streams} streams, ${p.seconds} s:`,
      );
      console.log(
        `  market updates ${p.updatesPerSecond}/s; calls per second into: price index ${p.callsPerSecond.priceIndex}, shards ${p.callsPerSecond.shard} (${p.shards} shards; ${p.groups} groups)`,
      );
      console.log(
        `  calls per market update: price index ${p.perUpdate.priceIndex}, each shard ${p.perUpdate.shardEach}; stream messages received ${p.messagesPerSecond}/s`,
      );
    }
    // A refused or failed request means the load was not what the figures claim: say so.
    if (failed > 0) {
      console.error(`${failed} requests failed or were refused (non-2xx): the figures above do not measure the intended load.`);
      process.exitCode = 1;
    }
  } finally {
    await stopAll();
  }
}

/** Lists the generated venue so the service holds MARKETS markets, and waits until every read lists them. */
async function listGeneratedVenue(url) {
  const started = Date.now();
  const headers = { "CF-Connecting-IP": "10.250.0.2" };
  await listVenue({ url, token: "bench-admin-token", count: MARKETS - 7, headers });
  for (;;) {
    const all = await (await fetch(`${url}/api/ticker`, { headers: { "CF-Connecting-IP": `10.250.1.${Date.now() % 250}` } })).json();
    if (Array.isArray(all) && all.length >= MARKETS) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  log(`listed ${MARKETS - 7} more markets through the operator API (${MARKETS} in all) in ${Date.now() - started} ms`);
}

/** Responses whose status is none of `allowed` (autocannon's per-status counts). */
function countOther(statusCodeStats, allowed) {
  return Object.entries(statusCodeStats ?? {}).reduce((n, [status, { count }]) => n + (allowed.includes(status) ? 0 : count), 0);
}

await main();
