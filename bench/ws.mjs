// `npm run bench:ws [-- --clients 1000] [-- --rate 10] [-- --seconds 10] [-- --json]`
//
// One market (BTCUSDT) updated at a fixed rate through the real signed ingest path
// (POST /v1/ingest), N WebSocket clients subscribed to its book stream through /api/ws, on
// workerd via Miniflare. Reports messages delivered per second, ingest-to-delivery latency
// p50/p99 (the publisher's send time to the client's receive time, one clock), the runtime's
// memory, and checks that no client lost a delta or saw one out of order. Loopback only; it
// stops by itself.
import { createHmac } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import WebSocket from "ws";
import { bundleService, startService } from "./service.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const CLIENTS = option("clients", 1000);
const RATE = option("rate", 10);
const SECONDS = option("seconds", 10);
const asJson = args.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};

/** Resident memory of the workerd processes this bench started (children of this process). */
function runtimeRssMiB() {
  let total = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && command.includes("workerd")) {
        const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        total += rss ? Number(rss[1]) / 1024 : 0;
      }
    } catch {
      // the process went away
    }
  }
  return Math.round(total);
}

async function publisherKey(base) {
  const headers = { "Content-Type": "application/json", "CF-Connecting-IP": "10.250.0.1" };
  const signup = await fetch(`${base}/account/signup`, { method: "POST", headers, body: JSON.stringify({ email: `ws-bench-${Date.now()}@example.com`, password: "bench password 1234" }) });
  const cookie = signup.headers.get("set-cookie").split(";")[0];
  const key = await fetch(`${base}/account/api-keys`, { method: "POST", headers: { ...headers, Cookie: cookie }, body: JSON.stringify({ label: "ws bench", permissions: ["publish"] }) });
  return key.json();
}

function signedIngest(base, key, body) {
  const raw = JSON.stringify(body);
  const timestamp = String(Date.now());
  const signature = createHmac("sha256", key.secret).update(`${timestamp}\nPOST\n/v1/ingest\n${raw}`).digest("hex");
  return fetch(`${base}/v1/ingest`, {
    method: "POST",
    body: raw,
    headers: { "Content-Type": "application/json", "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature, "CF-Connecting-IP": "10.250.0.2" },
  });
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
};

async function main() {
  log(`bundling; ${CLIENTS} clients, ${RATE} updates/s for ${SECONDS} s`);
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off" });
  const ws = service.url.replace("http", "ws");
  try {
    const key = await publisherKey(service.url);
    let sequence = 1;
    const level = (i) => [`${97000 + i}.00`, `${(1 + (Math.abs(i) % 7)).toFixed(5)}`];
    const first = await signedIngest(service.url, key, { symbol: "BTCUSDT", book: { type: "snapshot", sequence, bids: [level(-1), level(-2)], asks: [level(1), level(2)] } });
    if (!first.ok) throw new Error(`ingest answered ${first.status}: ${await first.text()}`);
    const rssBefore = runtimeRssMiB();

    const clients = [];
    const connectOne = (i) =>
      new Promise((resolve, reject) => {
        // Five clients per address: the most one IP may hold.
        const ip = Math.floor(i / 5);
        const socket = new WebSocket(`${ws}/api/ws?streams=book.BTCUSDT`, { headers: { "CF-Connecting-IP": `10.${100 + (ip >> 16)}.${(ip >> 8) & 255}.${ip & 255}` } });
        const client = { socket, sequence: 0, errors: 0, received: 0, latencies: [] };
        socket.on("message", (data) => {
          const message = JSON.parse(String(data));
          if (message.stream !== "book.BTCUSDT") return;
          const book = message.data;
          if (book.type === "delta" && book.sequence !== client.sequence + 1) client.errors += 1;
          if (book.type === "delta") {
            client.received += 1;
            const sentAt = sentTimes.get(book.sequence);
            if (sentAt !== undefined) client.latencies.push(performance.now() - sentAt);
          }
          client.sequence = book.sequence;
        });
        socket.on("open", () => resolve(client));
        socket.on("error", reject);
      });
    const sentTimes = new Map();
    // Connect in rounds of 50, under every address's public limit of 10 upgrades a second.
    for (let i = 0; i < CLIENTS; i += 50) clients.push(...(await Promise.all(Array.from({ length: Math.min(50, CLIENTS - i) }, (_, k) => connectOne(i + k)))));
    await new Promise((resolve) => setTimeout(resolve, 1000)); // every client has its snapshot
    const rssConnected = runtimeRssMiB();
    const startSequence = sequence;
    log(`${clients.length} clients connected; runtime RSS ${rssBefore} → ${rssConnected} MiB; publishing…`);

    const started = performance.now();
    const updates = RATE * SECONDS;
    for (let u = 0; u < updates; u++) {
      const due = started + (u * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sequence += 1;
      sentTimes.set(sequence, performance.now());
      const response = await signedIngest(service.url, key, { symbol: "BTCUSDT", book: { type: "delta", sequence, bids: [level(-3 - (u % 5))], asks: [level(3 + (u % 5))] } });
      if (!response.ok) throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
    }
    const lastSent = performance.now();
    // Wait for the last deltas to arrive everywhere (bounded).
    for (let i = 0; i < 100 && clients.some((c) => c.sequence < sequence); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    const elapsed = (Math.max(lastSent, performance.now() - 0) - started) / 1000;
    const latencies = clients.flatMap((c) => c.latencies);
    const delivered = clients.reduce((n, c) => n + c.received, 0);
    const expected = clients.length * (sequence - startSequence);
    const report = {
      clients: clients.length,
      updatesPerSecond: RATE,
      seconds: SECONDS,
      delivered,
      expected,
      lost: expected - delivered,
      outOfSequence: clients.reduce((n, c) => n + c.errors, 0),
      messagesPerSecond: Math.round(delivered / elapsed),
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      runtimeRssMiB: { beforeClients: rssBefore, withClients: rssConnected, afterRun: runtimeRssMiB() },
    };
    for (const c of clients) c.socket.terminate();
    if (asJson) console.log(JSON.stringify(report));
    else {
      console.log(`\ndelivered ${report.delivered}/${report.expected} deltas (lost ${report.lost}, out of sequence ${report.outOfSequence})`);
      console.log(`${report.messagesPerSecond} messages/s delivered; ingest→delivery p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms (target ≤ 100 ms)`);
      console.log(`workerd RSS: ${rssBefore} MiB idle, ${rssConnected} MiB with ${clients.length} clients, ${report.runtimeRssMiB.afterRun} MiB after the run`);
    }
    process.exitCode = report.lost === 0 && report.outOfSequence === 0 ? 0 : 1;
  } finally {
    await service.mf.dispose();
  }
}

await main();
