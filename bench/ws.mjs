// `npm run bench:ws [-- --clients 1000] [-- --rate 10] [-- --seconds 10] [-- --json]`
//
// One market (BTCUSDT) updated at a fixed rate through the real signed ingest path
// (`POST /v1/ingest`, one book delta per request), N WebSocket clients subscribed to its book
// stream through `/api/ws` (five per client IP, the most one IP may hold, so they spread over the
// StreamHub shards like real users), on workerd via Miniflare with the Worker on its own socket
// (no Miniflare entry worker in front, which would proxy — and compress — every frame once more).
//
// The publisher runs on its own thread, as a real publisher is its own system: its requests leave
// on time however busy the clients' thread is. Reports messages delivered per second,
// ingest-to-delivery latency p50/p99 (from just before the ingest request is sent to the
// client's receipt of the delta, on one clock: `performance.timeOrigin + performance.now()`), the
// runtime's memory and CPU, and checks that every client got every delta exactly once and in
// sequence. Loopback only; bounded in time (a watchdog ends it); exits 1 when a delta was lost or
// out of sequence.
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { option } from "./load.mjs";
import { createKey, sign, signUp } from "./signed-load.mjs";

const args = process.argv.slice(2);
const CLIENTS = Number(option("clients", 1000));
const RATE = Number(option("rate", 10));
const SECONDS = Number(option("seconds", 10));
const asJson = args.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};

// However the run goes, it ends: connecting, publishing and draining are bounded well inside this.
if (isMainThread) {
  setTimeout(
    () => {
      console.error("bench:ws did not finish in time");
      process.exit(2);
    },
    (SECONDS + 180) * 1000,
  ).unref();
}

async function publisherKey(base) {
  const cookie = await signUp(base, `ws-bench-${Date.now()}@example.com`, "10.250.0.1");
  return createKey(base, cookie, "ws bench", ["publish"], "10.250.0.1");
}

function signedIngest(base, key, body) {
  const raw = JSON.stringify(body);
  const timestamp = String(Date.now());
  const signature = sign(key.secret, timestamp, "POST", "/v1/ingest", raw);
  return fetch(`${base}/v1/ingest`, {
    method: "POST",
    body: raw,
    headers: { "Content-Type": "application/json", "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature, "CF-Connecting-IP": "10.250.0.2" },
  });
}

/** Milliseconds on a clock every thread of this process shares. */
const now = () => performance.timeOrigin + performance.now();
const level = (i) => [`${97000 + i}.00`, `${(1 + (Math.abs(i) % 7)).toFixed(5)}`];

/** The publisher thread: one delta per 1/RATE s, each sent at its due time; returns the send times. */
async function publish({ url, key, rate, seconds, startSequence }) {
  const sentAt = [];
  const started = now();
  let sequence = startSequence;
  for (let u = 0; u < rate * seconds; u++) {
    const wait = started + (u * 1000) / rate - now();
    if (wait > 0) await sleep(wait);
    sequence += 1;
    sentAt.push([sequence, now()]);
    const response = await signedIngest(url, key, {
      symbol: "BTCUSDT",
      book: { type: "delta", sequence, bids: [level(-3 - (u % 5))], asks: [level(3 + (u % 5))] },
    });
    if (!response.ok) throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
  }
  return sentAt;
}

/** Starts the publisher thread; resolves once it is loaded, with `run()` to start publishing. */
function publisherThread(options) {
  const worker = new Worker(new URL(import.meta.url), { workerData: options });
  const failed = new Promise((_resolve, reject) => {
    worker.once("error", reject);
    worker.once("exit", (code) => code !== 0 && reject(new Error(`publisher exited with ${code}`)));
  });
  const next = () => Promise.race([new Promise((resolve) => worker.once("message", resolve)), failed]);
  return next().then(() => ({
    run() {
      worker.postMessage("go");
      return next();
    },
  }));
}

/** The publisher thread's side: report ready, publish on "go", answer with the send times. */
async function publisherMain() {
  parentPort.postMessage("ready");
  await new Promise((resolve) => parentPort.once("message", resolve));
  parentPort.postMessage(await publish(workerData));
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  // Loaded here, so the publisher thread stays light.
  const { default: WebSocket } = await import("ws");
  const { bundleService, startService } = await import("./service.mjs");
  log(`bundling; ${CLIENTS} clients, ${RATE} updates/s for ${SECONDS} s`);
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off" }, { direct: true });
  const wsBase = service.url.replace("http", "ws");
  const clients = [];
  try {
    const key = await publisherKey(service.url);
    let sequence = 1;
    const first = await signedIngest(service.url, key, {
      symbol: "BTCUSDT",
      book: { type: "snapshot", sequence, bids: [level(-1), level(-2)], asks: [level(1), level(2)] },
    });
    if (!first.ok) throw new Error(`ingest answered ${first.status}: ${await first.text()}`);
    const rssBefore = service.rssMiB();

    /** Send time of each delta, by sequence (from the publisher thread). */
    const sentAt = new Map();
    const connectOne = (i) =>
      new Promise((resolve, reject) => {
        const ip = Math.floor(i / 5); // five clients per address: the most one IP may hold
        const socket = new WebSocket(`${wsBase}/api/ws?streams=book.BTCUSDT`, {
          headers: { "CF-Connecting-IP": `10.${100 + (ip >> 16)}.${(ip >> 8) & 255}.${ip & 255}` },
        });
        const client = { socket, sequence: 0, snapshots: 0, outOfSequence: 0, received: 0, receipts: [] };
        socket.on("message", (data) => {
          const receivedAt = now();
          const message = JSON.parse(String(data));
          if (message.stream !== "book.BTCUSDT") return;
          const book = message.data;
          if (book.type === "snapshot") {
            client.snapshots += 1;
          } else {
            if (book.sequence !== client.sequence + 1) client.outOfSequence += 1;
            client.received += 1;
            client.receipts.push(book.sequence, receivedAt);
          }
          client.sequence = book.sequence;
        });
        socket.on("open", () => resolve(client));
        socket.on("unexpected-response", (_request, response) => reject(new Error(`client ${i} refused: ${response.statusCode}`)));
        socket.on("error", reject);
      });
    // Rounds of 50: ten addresses each, under every address's public limit of 10 upgrades a second.
    for (let i = 0; i < CLIENTS; i += 50) clients.push(...(await Promise.all(Array.from({ length: Math.min(50, CLIENTS - i) }, (_, k) => connectOne(i + k)))));
    for (let i = 0; i < 100 && clients.some((c) => c.snapshots === 0); i++) await sleep(100);
    const withoutSnapshot = clients.filter((c) => c.snapshots === 0).length;
    if (withoutSnapshot > 0) throw new Error(`${withoutSnapshot} clients got no snapshot`);
    const rssConnected = service.rssMiB();
    log(`${clients.length} clients connected, each with its snapshot; workerd RSS ${rssBefore} → ${rssConnected} MiB; publishing…`);

    const startSequence = sequence;
    const publisher = await publisherThread({ url: service.url, key, rate: RATE, seconds: SECONDS, startSequence });
    const cpuBefore = service.cpuSeconds();
    const nodeCpuBefore = process.cpuUsage();
    const started = now();
    const sent = await publisher.run();
    for (const [seq, time] of sent) sentAt.set(seq, time);
    sequence = sent.at(-1)?.[0] ?? sequence;
    // Wait (bounded) for the last delta to reach everyone.
    for (let i = 0; i < 100 && clients.some((c) => c.sequence < sequence); i++) await sleep(50);
    const elapsed = (now() - started) / 1000;
    const runtimeCpu = service.cpuSeconds() - cpuBefore;
    const nodeCpu = process.cpuUsage(nodeCpuBefore);

    const latencies = [];
    for (const c of clients) for (let i = 0; i < c.receipts.length; i += 2) latencies.push(c.receipts[i + 1] - sentAt.get(c.receipts[i]));
    latencies.sort((a, b) => a - b);
    const delivered = clients.reduce((n, c) => n + c.received, 0);
    const expected = clients.length * (sequence - startSequence);
    const report = {
      clients: clients.length,
      updatesPerSecond: RATE,
      seconds: SECONDS,
      delivered,
      expected,
      lost: expected - delivered,
      outOfSequence: clients.reduce((n, c) => n + c.outOfSequence, 0),
      resnapshots: clients.reduce((n, c) => n + c.snapshots - 1, 0),
      messagesPerSecond: Math.round(delivered / elapsed),
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      maxMs: Number(latencies.at(-1)?.toFixed(1)),
      runtimeRssMiB: { beforeClients: rssBefore, withClients: rssConnected, afterRun: service.rssMiB() },
      cpuSeconds: { workerd: Number(runtimeCpu.toFixed(2)), loadGenerator: Number(((nodeCpu.user + nodeCpu.system) / 1e6).toFixed(2)) },
    };
    if (asJson) console.log(JSON.stringify(report));
    else {
      console.log(
        `\ndelivered ${report.delivered}/${report.expected} deltas (lost ${report.lost}, out of sequence ${report.outOfSequence}, re-snapshots ${report.resnapshots})`,
      );
      console.log(
        `${report.messagesPerSecond} messages/s delivered; ingest→delivery p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms (target p99 ≤ 100 ms)`,
      );
      console.log(`workerd RSS: ${rssBefore} MiB idle, ${rssConnected} MiB with ${clients.length} clients, ${report.runtimeRssMiB.afterRun} MiB after the run`);
      console.log(
        `CPU during the run: workerd ${report.cpuSeconds.workerd} s, load generator ${report.cpuSeconds.loadGenerator} s (${elapsed.toFixed(1)} s wall, 2 cores shared)`,
      );
    }
    process.exitCode = report.lost === 0 && report.outOfSequence === 0 && report.resnapshots === 0 ? 0 : 1;
  } finally {
    for (const c of clients) c.socket.terminate();
    await service.mf.dispose();
  }
}

if (isMainThread) await main();
else await publisherMain();
