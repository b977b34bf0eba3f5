// `npm run bench:restart [-- --levels 100] [-- --rings 1.5] [-- --json]`
//
// What a market host reads when it starts with a full journal (docs/capacity.md#a-hosts-restart).
// Group 0's 64 markets (the seven default markets and V0USDT…V56USDT) each get a book of
// `--levels` a side, then batches of the venue model's shape (5 level changes, 1 trade), half the
// markets a tick and the other half the next, until the group's journal has been written round
// `--rings` times (4,096 rows a ring): every market's records spread over the ring and each covered
// by its own snapshot when the ring came round, as at a venue. Then the runtime is stopped and
// started again on the same files, and counted:
//   first   — one batch to one market: the host's start (the journal's index of who holds what) and
//             that market's load, up to its first acknowledgement;
//   all     — then one batch to each of the other 63: every market loaded.
// Rows read from /admin/metrics (`mds_storage_rows_read_total{object="market"}`, each object's
// counts handed on at once in this run), the wall time of each step (one workerd thread, nothing
// else running: the host's CPU), and the journal's rows and bytes from the host's SQLite file.
// Loopback only; bounded; it stops everything it started.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { option } from "./load.mjs";
import { openChannel } from "./publisher.mjs";
import { bundleService, startService, work } from "./service.mjs";
import { venueFeed } from "./venue-feed.mjs";

const LEVELS = Number(option("levels", 100));
const RINGS = Number(option("rings", 1.5));
const asJson = process.argv.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};
const TOKEN = "bench-admin-token";
const RING = 4_096;
/** The default markets' scales and a mid: a trade's notional passes each market's minimum. */
const DEFAULT_MARKETS = {
  BTCUSDT: [2, 5, 60_000],
  ETHUSDT: [2, 4, 3_000],
  SOLUSDT: [3, 2, 150],
  XRPUSDT: [4, 1, 1],
  ETHBTC: [5, 4, 0.05],
  SOLBTC: [7, 2, 0.0025],
  BTCUSDC: [2, 5, 60_000],
};
const VARS = { DEMO_FEED: "off", METRICS: "on", METRICS_FLUSH_MS: "0", INGEST_TICK_MS: "20" };

/** `mds_storage_rows_read_total{object="market"}` now. */
async function marketRowsRead(url) {
  const response = await fetch(`${url}/admin/metrics`, { headers: { Authorization: `Bearer ${TOKEN}`, "CF-Connecting-IP": "10.80.0.1" } });
  if (response.status !== 200) throw new Error(`/admin/metrics ${response.status}`);
  const line = (await response.text()).split("\n").find((l) => l.startsWith('mds_storage_rows_read_total{object="market"}'));
  return Number(line?.split(" ")[1] ?? 0);
}

/** Group 0's host file: its journal's rows and bytes. */
function journalHeld(persist) {
  const dir = path.join(persist, "do", "service-MarketObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(path.join(dir, file), { readOnly: true });
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'journal'").get()) continue;
      if (!db.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'm_BTCUSDT_meta'").get()) continue;
      const row = db.prepare("SELECT count(*) AS rows, sum(length(body)) AS bytes, max(n) AS n FROM journal").get();
      return { rows: row.rows, bytes: row.bytes, written: row.n };
    } finally {
      db.close();
    }
  }
  throw new Error("group 0's host file not found");
}

async function main() {
  const persist = path.join(work, "restart-state");
  mkdirSync(work, { recursive: true });
  rmSync(persist, { recursive: true, force: true });
  const script = bundleService(asJson);
  let service = await startService(script, VARS, { persist });
  const result = { levels: LEVELS, rings: RINGS };
  try {
    let { url } = service;
    await listVenue({ url, token: TOKEN, count: 57, headers: { "CF-Connecting-IP": "10.80.0.2" } });
    const key = await issuePublishKey(url, TOKEN, { label: "bench restart" });
    let channel = openChannel(url, key, "10.80.1.1");
    await channel.opened;
    const markets = [
      ...Object.entries(DEFAULT_MARKETS).map(([symbol, [p, q, mid]]) => venueFeed(symbol, p, q, mid, LEVELS)),
      ...Array.from({ length: 57 }, (_, i) => venueFeed(`V${i}USDT`, [2, 3, 4][i % 3], [3, 2, 1][i % 3], 100 + i, LEVELS)),
    ];
    for (let i = 0; i < markets.length; i += 32) await Promise.all(channel.sendMany(markets.slice(i, i + 32).map((m) => m.snapshot())));
    const rounds = Math.ceil(RING * RINGS);
    const started = performance.now();
    for (let round = 0; round < rounds; round++) {
      // Half the markets a round, each round's batches in one message: one tick each.
      await Promise.all(channel.sendMany(markets.filter((_, i) => i % 2 === round % 2).map((m) => m.batch())));
      if (round % 1_000 === 999) log(`  ${round + 1} of ${rounds} rounds, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    channel.close();
    await service.mf.dispose();
    result.journal = journalHeld(persist);
    log(`journal: ${result.journal.rows} rows, ${(result.journal.bytes / 1e6).toFixed(1)} MB (${result.journal.written} written)`);

    service = await startService(script, VARS, { persist, restart: true });
    url = service.url;
    const before = await marketRowsRead(url);
    channel = openChannel(url, key, "10.80.1.2");
    await channel.opened;
    let at = performance.now();
    await channel.send(markets[0].batch());
    result.first = { ms: performance.now() - at, rowsRead: (await marketRowsRead(url)) - before };
    log(`first acknowledgement after the restart: ${result.first.ms.toFixed(0)} ms, ${result.first.rowsRead} rows read`);
    const afterFirst = await marketRowsRead(url);
    at = performance.now();
    await Promise.all(channel.sendMany(markets.slice(1).map((m) => m.batch())));
    result.all = { ms: performance.now() - at, rowsRead: (await marketRowsRead(url)) - afterFirst };
    log(`the other 63 markets loaded and acknowledged: ${result.all.ms.toFixed(0)} ms, ${result.all.rowsRead} rows read`);
    channel.close();
  } finally {
    await service.mf.dispose();
    rmSync(persist, { recursive: true, force: true });
  }
  if (asJson) console.log(JSON.stringify(result));
}

await main();
