// `npm run bench:profile [-- --route ticker|orderbook|prices|book-ticker|tickers-all|signed-ticker|limiter-only|flood] [-- --seconds N] [-- --top N] [-- --entry]`
//
// Where a route's time goes: runs the service as `npm run bench` does, loads one route at 32
// connections while V8's sampling profiler records the service's isolate (the Worker and its
// Durable Objects share it), and prints self time by source file (mapped through the bundle's
// source map back to src/ and node_modules/) and the top functions. Time spent in workerd's
// C++ outside a JavaScript call (HTTP, RPC dispatch between the Worker and its objects)
// shows up as "(program)". The Worker is served on its own socket; `--entry` puts Miniflare's
// entry worker in front, as `npm run bench` does. Loopback only; it stops everything it started.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { inspector, selfTimes, sourceMapper } from "./inspector.mjs";
import { clientIps, fromManyIps, fromOneIp, load, option, touchClients, warmUp } from "./load.mjs";
import { bundleService, root, startService, work } from "./service.mjs";
import { prepareSignedLoad } from "./signed-load.mjs";

const args = process.argv.slice(2);
const ROUTE = option("route", "ticker");
const SECONDS = Number(option("seconds", 6));
const TOP = Number(option("top", 25));
const INSPECTOR_PORT = Number(option("inspector-port", 9339));
/** A bundle built elsewhere (e.g. a variant of src/ under study); default: build this tree's. */
const SCRIPT = option("script", undefined);
const PATHS = {
  ticker: "/api/ticker/BTCUSDT",
  orderbook: "/api/orderbook/BTCUSDT?depth=100",
  prices: "/api/prices",
  "book-ticker": "/api/book-ticker/BTCUSDT",
  "tickers-all": "/api/ticker",
  "signed-ticker": "/v1/ticker/24hr?symbol=BTCUSDT",
  // The service's public path around no work (the bench's limiter-only reference).
  "limiter-only": "/api/time",
  // One client address far over its limit (the bench's flood route): refused by the isolate.
  flood: "/api/ticker/BTCUSDT",
};
if (!PATHS[ROUTE]) throw new Error(`--route must be one of ${Object.keys(PATHS).join(", ")}`);

async function main() {
  mkdirSync(work, { recursive: true });
  const script = SCRIPT ? path.resolve(SCRIPT) : bundleService(true);
  const service = await startService(script, { DEMO_FEED: "on" }, { direct: !args.includes("--entry"), inspectorPort: INSPECTOR_PORT });
  const nextIp = clientIps();
  try {
    await warmUp(service.url, nextIp);
    await touchClients(service.url, nextIp);
    const setupRequest =
      ROUTE === "signed-ticker"
        ? (await prepareSignedLoad(service.url, PATHS[ROUTE], nextIp)).setupRequest
        : ROUTE === "flood"
          ? fromOneIp("10.251.0.1")
          : fromManyIps(nextIp);
    const run = () => load({ url: service.url + PATHS[ROUTE], seconds: SECONDS, setupRequest });
    await run(); // warm the path (objects created, code optimised)
    const client = inspector(`ws://127.0.0.1:${INSPECTOR_PORT}/core:user:service`);
    await client.opened;
    await client.send("Profiler.enable");
    await client.send("Profiler.setSamplingInterval", { interval: 200 });
    await client.send("Profiler.start");
    const result = await run();
    const { profile } = await client.send("Profiler.stop");
    client.close();
    const saved = path.join(work, `profile-${ROUTE}.cpuprofile`);
    writeFileSync(saved, JSON.stringify(profile));

    const map = sourceMapper(script);
    const { total, byFile, byFunction } = selfTimes(profile, map);
    const requests = result.requests.total;
    const line = ([name, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / requests).toFixed(1).padStart(7)} µs/req  ${name}`;
    console.log(
      `${ROUTE} ${PATHS[ROUTE]}: ${result.requests.average.toFixed(0)} req/s over ${SECONDS} s (profiler on), ${requests} requests, ${(total / 1000).toFixed(0)} ms sampled`,
    );
    console.log("\nself time by source (the isolate's wall clock, idle included):");
    for (const entry of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(line(entry));
    console.log("\ntop functions by self time (native frames named with their caller):");
    for (const entry of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(line(entry));
    console.log(`\nthe whole profile: ${path.relative(root, saved)} (Chrome DevTools → Performance → Load profile)`);
  } finally {
    await service.mf.dispose();
  }
}

await main();
