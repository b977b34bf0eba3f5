// tardis-dev, unchanged, pointed at this service (docs/tardis.md): replays the last hour of BTCUSDT
// as Binance's messages, rebuilds the book with computeBookSnapshots and prints trades and the top
// of the book minute by minute; then downloads yesterday's four CSV datasets and counts their rows.
// Run against `npm start`: `npm run example:tardis` (it trusts npm start's local certificate,
// .dev-tls/cert.pem; MDS_HTTPS_URL for another server, MDS_SYMBOL for another market).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { adminToken } from "../../scripts/publish-key.mjs";

const httpsUrl = process.env.MDS_HTTPS_URL ?? `https://127.0.0.1:${Number(process.env.PORT ?? 8787) + 1}`;
const baseUrl = process.env.MDS_BASE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`;
const symbol = process.env.MDS_SYMBOL ?? "BTCUSDT";

// tardis-dev 13 reads downloadDatasets' options once, when it is loaded: init first (docs/tardis.md#tardis-dev).
const { init } = await import("tardis-dev/dist/options.js");
init({ endpoint: `${httpsUrl}/tardis/v1`, datasetsEndpoint: `${httpsUrl}/tardis/v1/datasets`, cacheDir: mkdtempSync(path.join(tmpdir(), "tardis-cache-")) });
const { compute, computeBookSnapshots, downloadDatasets, normalizeBookChanges, normalizeTrades, replayNormalized } = await import("tardis-dev");

const MINUTE = 60_000;
const to = Math.floor(Date.now() / MINUTE) * MINUTE;
const from = to - 60 * MINUTE;
console.log(`replaying ${symbol} ${new Date(from).toISOString()} – ${new Date(to).toISOString()} from ${httpsUrl}/tardis/v1`);
const messages = replayNormalized(
  { exchange: "binance", symbols: [symbol], from: new Date(from).toISOString(), to: new Date(to).toISOString() },
  normalizeTrades,
  normalizeBookChanges,
);
const minutes = new Map();
let trades = 0;
for await (const message of compute(messages, computeBookSnapshots({ depth: 5, interval: MINUTE }))) {
  const minute = new Date(Math.floor(message.timestamp.valueOf() / MINUTE) * MINUTE).toISOString().slice(11, 16);
  const row = minutes.get(minute) ?? { trades: 0, volume: 0, top: "" };
  if (message.type === "trade") {
    trades += 1;
    row.trades += 1;
    row.volume += message.amount;
  }
  if (message.type === "book_snapshot" && message.bids[0] && message.asks[0]) {
    row.top = `bid ${message.bids[0].price} × ${message.bids[0].amount}, ask ${message.asks[0].price} × ${message.asks[0].amount}`;
  }
  minutes.set(minute, row);
}
for (const [minute, row] of minutes)
  if (row.trades > 0 || row.top) console.log(`${minute}  ${String(row.trades).padStart(4)} trades  ${row.volume.toFixed(5).padStart(10)}  ${row.top}`);
console.log(`${trades} trades in the hour${minutes.size < 60 ? " (the service's history begins within it)" : ""}`);

// Yesterday's datasets: built after the day ends; this asks the local operator API to build them now.
const day = new Date(to - 24 * 60 * MINUTE).toISOString().slice(0, 10);
const built = await fetch(`${baseUrl}/admin/archive`, {
  method: "POST",
  headers: { Authorization: `Bearer ${adminToken()}`, "Content-Type": "application/json" },
  body: JSON.stringify({ date: day, symbols: [symbol] }),
});
if (!built.ok) throw new Error(`POST /admin/archive: ${built.status} ${await built.text()}`);
const [y, m, d] = day.split("-");
for (let attempt = 0; (await fetch(`${baseUrl}/tardis/v1/datasets/binance/quotes/${y}/${m}/${d}/${symbol}.csv.gz`)).status !== 200; attempt++) {
  if (attempt > 120) throw new Error(`${day}'s datasets were not built within a minute`);
  await new Promise((resolve) => setTimeout(resolve, 500));
}
const downloadDir = mkdtempSync(path.join(tmpdir(), "tardis-datasets-"));
const next = new Date(Date.parse(day) + 24 * 60 * MINUTE).toISOString().slice(0, 10);
await downloadDatasets({
  exchange: "binance",
  dataTypes: ["trades", "incremental_book_L2", "book_snapshot_25", "quotes"],
  from: day,
  to: next,
  symbols: [symbol],
  downloadDir,
});
for (const file of readdirSync(downloadDir).sort()) {
  const rows =
    gunzipSync(readFileSync(path.join(downloadDir, file)))
      .toString("utf8")
      .trimEnd()
      .split("\n").length - 1;
  console.log(`${downloadDir}/${file}: ${rows} rows`);
}
console.log("(a service started today has no history yesterday: its files hold their header only)");
