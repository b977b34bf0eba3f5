import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, inject, it } from "vitest";
import { CERT_PATH } from "../../scripts/dev-tls.mjs";
import { adminToken, issuePublishKey } from "../../scripts/publish-key.mjs";
import { listVenue } from "../../scripts/venue.mjs";
import { publisherChannel } from "./publisher";

/**
 * Tardis's own client, `tardis-dev`, unchanged against the service started as `npm start` does
 * (docs/tardis.md): configured only by `init({ endpoint, datasetsEndpoint })`, it replays minutes of
 * the demo feed's BTCUSDT — the raw messages, and normalized trades and book changes with the book
 * it builds — and downloads a day's datasets. The book it builds equals `?at=` at 20 sampled
 * moments; every trade of the span arrives once, as `/api/trades` lists them.
 */
const baseUrl = inject("baseUrl");
const httpsUrl = inject("httpsUrl");
const MINUTE = 60_000;
type Level = [number, number];
interface Run {
  raw: { lines: number; streams: Record<string, number> };
  trades: { id: string; price: number; amount: number; side: string; time: number }[];
  books: { time: number; bids: Level[]; asks: Level[] }[];
  datasets: string[];
}

/** tardis-dev in a process of its own, trusting the local certificate as a user's shell would (NODE_EXTRA_CA_CERTS). */
function runTardis(ask: Record<string, unknown>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, "tardis-client.mjs"), JSON.stringify({ httpsUrl, ...ask })], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: CERT_PATH, DEBUG: "tardis-dev" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    // Bounded: tardis-dev retries a failed download for minutes; its log (DEBUG=tardis-dev) says why.
    const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out) as Run);
      else reject(new Error(`tardis-dev exited with ${code}: ${err.slice(-3000)}`));
    });
  });
}

let reads = 0;
async function get(url: string) {
  // Each read from an address of its own: the public limit is 10 a second per address.
  const ip = `198.18.${60 + (Math.floor(reads / 250) % 4)}.${1 + (reads++ % 250)}`;
  const response = await fetch(`${baseUrl}${url}`, { headers: { "CF-Connecting-IP": ip } });
  expect(response.status, `GET ${url}`).toBe(200);
  return response.json();
}

describe("tardis-dev against the running service (docs/tardis.md)", () => {
  it("replay and replayNormalized of two minutes of BTCUSDT: the book tardis-dev builds is ?at='s at 20 moments, every trade once", async () => {
    // Two whole minutes, ended, that the demo feed wrote into (the service started minutes ago; wait for the next minute if not).
    let to = Math.floor(Date.now() / MINUTE) * MINUTE;
    for (let attempt = 0; ; attempt++) {
      const book = await get(`/api/orderbook/BTCUSDT?at=${to - MINUTE}&depth=1`);
      if (book.sequence > 0) break;
      if (attempt >= 3) throw new Error("the demo feed wrote no BTCUSDT book in three minutes");
      await new Promise((resolve) => setTimeout(resolve, to + MINUTE + 1_000 - Date.now()));
      to = Math.floor(Date.now() / MINUTE) * MINUTE;
    }
    const from = to - 2 * MINUTE;
    const cacheDir = mkdtempSync(path.join(tmpdir(), "tardis-cache-"));
    try {
      const run = await runTardis({ symbol: "BTCUSDT", from: new Date(from).toISOString(), to: new Date(to).toISOString(), cacheDir });
      expect(run.raw.streams["btcusdt@depthSnapshot"], "the replay opens with a generated snapshot").toBe(1);
      expect(run.raw.streams["btcusdt@depth@100ms"], "book changes").toBeGreaterThan(20);

      // Every trade of the span once, in order: what /api/trades lists for it.
      const listed: { tradeId: number; price: string; quantity: string; side: string; time: number }[] = await get(
        `/api/trades/BTCUSDT?startTime=${from}&endTime=${to - 1}&limit=1000`,
      );
      expect(listed.length, "the demo feed traded in the span").toBeGreaterThan(5);
      expect(
        run.trades.map((t) => [Number(t.id), t.price, t.amount, t.side, t.time]),
        "tardis-dev's trades are the span's, each once",
      ).toEqual(listed.map((t) => [t.tradeId, Number(t.price), Number(t.quantity), t.side, t.time]));
      expect(run.raw.streams["btcusdt@trade"]).toBe(listed.length);

      // The book tardis-dev built (a snapshot at every change) against ?at= at 20 of those moments.
      const moments = [...new Set(run.books.map((b) => b.time))];
      expect(moments.length, "book changes in the span").toBeGreaterThanOrEqual(20);
      const sampled = Array.from({ length: 20 }, (_, i) => moments[Math.floor((i * (moments.length - 1)) / 19)]!);
      for (const time of sampled) {
        const built = run.books.filter((b) => b.time <= time).at(-1)!;
        const answer = await get(`/api/orderbook/BTCUSDT?at=${time}&depth=1000`);
        const numbers = (levels: [string, string][]) => levels.map(([p, q]) => [Number(p), Number(q)]);
        expect({ bids: built.bids, asks: built.asks }, `the book at ${new Date(time).toISOString()}`).toEqual({
          bids: numbers(answer.bids),
          asks: numbers(answer.asks),
        });
      }
    } finally {
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 300_000);

  it("downloadDatasets of a day: the four CSVs in Tardis's columns, its trades each once; a minute of the built day is read with no market's host (metric)", async () => {
    // A market of its own, with trades published late into yesterday (a publisher may send trades up to 7 days late).
    const symbol = "V5USDT";
    await listVenue({ url: baseUrl, token: adminToken(), count: 6 });
    const key = await issuePublishKey(baseUrl, adminToken(), { label: "tardis datasets test", markets: [symbol] });
    const channel = await publisherChannel(baseUrl, key);
    const yesterday = Math.floor(Date.now() / (24 * 60 * MINUTE)) * 24 * 60 * MINUTE - 24 * 60 * MINUTE;
    const date = new Date(yesterday).toISOString().slice(0, 10);
    const trades = Array.from({ length: 30 }, (_, i) => ({
      id: `late-${i}`,
      price: (20 + i / 100).toFixed(4),
      quantity: `${1 + (i % 4)}.0`,
      side: i % 3 === 0 ? "sell" : "buy",
      time: yesterday + 3 * 60 * MINUTE + i * 7_000,
    }));
    for (let attempt = 0; ; attempt++) {
      const answer = await channel.send({ symbol, trades });
      if (answer.result) break;
      if (attempt > 40) throw new Error(`the new market takes no batch: ${JSON.stringify(answer.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 250)); // the listing reaches every isolate within a second
    }
    channel.close();
    const archived = await fetch(`${baseUrl}/admin/archive`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken()}`, "Content-Type": "application/json" },
      body: JSON.stringify({ date, symbols: [symbol] }),
    });
    expect(archived.status, await archived.clone().text()).toBe(200);
    // The daily files' instance hands the day's datasets on when its trades zip is written: wait for them.
    const [y, m, d] = date.split("-");
    const datasetUrl = (type: string) => `${baseUrl}/tardis/v1/datasets/binance/${type}/${y}/${m}/${d}/${symbol}.csv.gz`;
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(datasetUrl("quotes"), { headers: { "CF-Connecting-IP": "198.18.70.1" } });
      if (response.status === 200) break;
      expect(response.status, "a day not built yet is 404").toBe(404);
      if (attempt > 120) throw new Error(`${date}'s datasets of ${symbol} were not built in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    const downloadDir = mkdtempSync(path.join(tmpdir(), "tardis-datasets-"));
    const cacheDir = mkdtempSync(path.join(tmpdir(), "tardis-cache-"));
    try {
      const dataTypes = ["trades", "incremental_book_L2", "book_snapshot_25", "quotes"];
      // A minute of the built day, as tardis-dev replays it: its trades from the day's dataset.
      const from = new Date(yesterday + 3 * 60 * MINUTE).toISOString();
      const to = new Date(yesterday + 3 * 60 * MINUTE + 2 * MINUTE).toISOString();
      const run = await runTardis({ symbol, from, to, cacheDir, datasetsDay: date, dataTypes, downloadDir });
      expect(run.datasets.sort(), "the four files downloadDatasets wrote").toEqual(dataTypes.map((type) => `binance_${type}_${date}_${symbol}.csv.gz`).sort());
      const csv = (type: string) =>
        gunzipSync(readFileSync(path.join(downloadDir, `binance_${type}_${date}_${symbol}.csv.gz`)))
          .toString("utf8")
          .trimEnd()
          .split("\n");
      const rows = csv("trades");
      expect(rows[0], "Tardis's trades columns").toBe("exchange,symbol,timestamp,local_timestamp,id,side,price,amount");
      expect(
        rows.slice(1).map((row) => row.split(",")),
        "every trade of the day once, in trade id order, times in microseconds",
      ).toEqual(trades.map((t, i) => ["binance", symbol, `${t.time}000`, `${t.time}000`, String(i + 1), t.side, t.price, t.quantity]));
      expect(csv("incremental_book_L2")[0]).toBe("exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount");
      expect(csv("quotes")[0]).toBe("exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount");
      expect(csv("book_snapshot_25")[0]!.split(",").slice(0, 8)).toEqual([
        "exchange",
        "symbol",
        "timestamp",
        "local_timestamp",
        "asks[0].price",
        "asks[0].amount",
        "bids[0].price",
        "bids[0].amount",
      ]);
      expect(
        run.trades.map((t) => [t.id, t.time]),
        "the replayed minutes' trades, from the built day",
      ).toEqual(trades.filter((t) => t.time < Date.parse(to)).map((t, i) => [String(i + 1), t.time]));
    } finally {
      rmSync(downloadDir, { recursive: true, force: true });
      rmSync(cacheDir, { recursive: true, force: true });
    }
    // A minute of the built day's trades is read with no market's host, and counted so.
    const edgeReads = async () => {
      const metrics = await (await fetch(`${baseUrl}/admin/metrics`, { headers: { Authorization: `Bearer ${adminToken()}` } })).text();
      return Number(/mds_tardis_reads_total\{kind="minute",source="edge"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    };
    const before = await edgeReads();
    const filters = encodeURIComponent(JSON.stringify([{ channel: "trade", symbols: [symbol.toLowerCase()] }]));
    for (const offset of [0, 1]) {
      const minute = await fetch(
        `${baseUrl}/tardis/v1/data-feeds/binance?from=${new Date(yesterday + 3 * 60 * MINUTE).toISOString()}&offset=${offset}&filters=${filters}`,
        {
          headers: { "CF-Connecting-IP": `198.18.70.${10 + offset}` },
        },
      );
      expect(minute.status).toBe(200);
      expect(minute.headers.get("X-Tardis-Read"), "the built day's trades, read from its dataset").toBe("edge");
      // The first minute's trades: 7 s apart from 03:00:00, nine of them.
      if (offset === 0) expect((await minute.text()).trimEnd().split("\n")).toHaveLength(9);
    }
    // Counters reach /admin/metrics within METRICS_FLUSH_MS (10 s).
    for (let attempt = 0; (await edgeReads()) < before + 2; attempt++) {
      if (attempt > 60) throw new Error(`mds_tardis_reads_total{kind="minute",source="edge"} did not count the two minutes`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }, 300_000);
});
