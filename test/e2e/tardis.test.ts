import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { CERT_PATH } from "../../scripts/dev-tls.mjs";

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
      env: { ...process.env, NODE_EXTRA_CA_CERTS: CERT_PATH },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as Run) : reject(new Error(`tardis-dev exited with ${code}: ${err.slice(-2000)}`))));
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
});
