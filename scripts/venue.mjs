// `npm run venue -- --markets 2000 [--url http://127.0.0.1:8787] [--batch 500]`: lists a generated
// venue of N markets (and their base assets) through the operator API, in arrays of up to 500,
// for load tests and demos. Reads ADMIN_TOKEN from the environment or .dev.vars. Markets already
// listed are left as they are, so it can run twice.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    markets: { type: "string", default: "2000" },
    url: { type: "string", default: `http://127.0.0.1:${process.env.PORT ?? 8787}` },
    batch: { type: "string", default: "500" },
    quote: { type: "string", default: "USDT" },
  },
});
const count = Number(values.markets);
const batch = Math.min(500, Number(values.batch));
const token =
  process.env.ADMIN_TOKEN ??
  readFileSync(".dev.vars", "utf8")
    .split("\n")
    .map((line) => /^ADMIN_TOKEN="?([^"]*)"?$/.exec(line)?.[1])
    .find(Boolean);
if (!token) throw new Error("no ADMIN_TOKEN: set it, or run npm start once to write .dev.vars");

/** @param {string} path @param {unknown} body */
async function post(path, body) {
  const response = await fetch(values.url + path, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.status !== 201 && response.status !== 409) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
  return response.status;
}

/** Lists in arrays of `batch`; an array that is refused as taken (409) is listed again one by one. */
async function listAll(path, items) {
  let listed = 0;
  for (let i = 0; i < items.length; i += batch) {
    const chunk = items.slice(i, i + batch);
    if ((await post(path, chunk)) === 201) listed += chunk.length;
    else for (const item of chunk) if ((await post(path, item)) === 201) listed += 1;
  }
  return listed;
}

const started = Date.now();
const assets = Array.from({ length: count }, (_, i) => ({ asset: `V${i}`, name: `Venue asset ${i}`, decimals: 8 }));
const markets = assets.map((a, i) => ({
  base: a.asset,
  quote: values.quote,
  tickSize: ["0.01", "0.001", "0.0001"][i % 3],
  stepSize: ["0.001", "0.01", "0.1"][i % 3],
  minQty: ["0.001", "0.01", "0.1"][i % 3],
  maxQty: "1000000",
  minNotional: "1",
}));
const newAssets = await listAll("/admin/assets", assets);
const newMarkets = await listAll("/admin/markets", markets);
console.log(`listed ${newAssets} assets and ${newMarkets} markets (${count} asked) in ${Date.now() - started} ms at ${values.url}`);
