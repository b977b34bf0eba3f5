// `npm run venue -- --markets 2000 [--url http://127.0.0.1:8787] [--batch 500] [--history DAYS [--symbols A,B]]`: lists a generated
// venue of N markets (V0USDT, V1USDT, … and their base assets) through the operator API, in arrays
// of up to 500, for load tests and demos. Reads ADMIN_TOKEN from the environment or .dev.vars.
// What is already listed is left as it is, so it can run twice. `npm run bench -- --markets N`
// lists its venue with the same function. `--history 365` imports a generated year of one-minute
// candles for the default markets (or `--symbols`), and lists no generated markets unless
// `--markets` is given too (docs/history.md#import).
import { parseArgs } from "node:util";
import { adminToken } from "./publish-key.mjs";
import { importHistory } from "./venue-history.mjs";

/**
 * @param {{ url: string, token: string, count: number, batch?: number, quote?: string, headers?: Record<string, string> }} options
 * @returns {Promise<{ assets: number, markets: number }>} how many were newly listed
 */
export async function listVenue({ url, token, count, batch = 500, quote = "USDT", headers = {} }) {
  const size = Math.min(500, batch);
  /** @param {string} path @param {unknown} body */
  const post = async (path, body) => {
    const response = await fetch(url + path, {
      method: "POST",
      headers: { ...headers, Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (response.status !== 201 && response.status !== 409) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
    return response.status;
  };
  /** Lists in arrays; an array refused as taken (409) is listed again one by one. */
  const listAll = async (path, items) => {
    let listed = 0;
    for (let i = 0; i < items.length; i += size) {
      const chunk = items.slice(i, i + size);
      if ((await post(path, chunk)) === 201) listed += chunk.length;
      else for (const item of chunk) if ((await post(path, item)) === 201) listed += 1;
    }
    return listed;
  };
  const assets = Array.from({ length: count }, (_, i) => ({ asset: `V${i}`, name: `Venue asset ${i}`, decimals: 8 }));
  const markets = assets.map((a, i) => ({
    base: a.asset,
    quote,
    tickSize: ["0.01", "0.001", "0.0001"][i % 3],
    stepSize: ["0.001", "0.01", "0.1"][i % 3],
    minQty: ["0.001", "0.01", "0.1"][i % 3],
    maxQty: "1000000",
    minNotional: "1",
  }));
  return { assets: await listAll("/admin/assets", assets), markets: await listAll("/admin/markets", markets) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      markets: { type: "string" },
      url: { type: "string", default: `http://127.0.0.1:${process.env.PORT ?? 8787}` },
      batch: { type: "string", default: "500" },
      quote: { type: "string", default: "USDT" },
      history: { type: "string" },
      symbols: { type: "string" },
    },
  });
  const token = adminToken();
  const started = Date.now();
  if (values.markets !== undefined || values.history === undefined) {
    const count = Number(values.markets ?? 2000);
    const listed = await listVenue({ url: values.url, token, count, batch: Number(values.batch), quote: values.quote });
    console.log(`listed ${listed.assets} assets and ${listed.markets} markets (${count} asked) in ${Date.now() - started} ms at ${values.url}`);
  }
  if (values.history !== undefined) {
    const days = Number(values.history);
    if (!Number.isInteger(days) || days < 1 || days > 3_650) throw new Error("--history is a number of days, 1 to 3650");
    const symbols = values.symbols?.split(",");
    const imported = await importHistory({ url: values.url, token, days, symbols, log: (line) => console.log(line) });
    const minutes = imported.reduce((n, m) => n + m.imported, 0);
    console.log(`imported ${minutes} minutes of history into ${imported.length} markets in ${Date.now() - started} ms at ${values.url}`);
  }
}
