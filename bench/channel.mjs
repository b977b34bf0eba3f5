// `npm run bench:channel [-- --markets 2000] [-- --rate 10] [-- --seconds 20] [-- --json] [-- --profile]`
//
// A venue on one publishing channel (docs/publishing.md#the-publisher-channel): `--markets` listed
// markets, each a book of 20 levels a side, then `--rate` batches a second each of the venue
// model's shape (5 level changes and a trade) offered over ONE `/v1/publish` connection — the
// model is 2,000 × 10 = 20,000 batches a second — as a feed handler sends them: every 20 ms what
// is due, in messages of up to 1,024 batches, never more than the channel's window of 4,096
// unanswered (what the window holds back waits, as a feed handler's would). It reports batches
// offered and acknowledged a second, refusals by code (RATE_LIMITED must be none), ack p50/p99,
// and workerd's CPU per acknowledged batch — every object (the channel, 32 hosts, the shards) on
// its one thread here, where each has its own on Cloudflare. `--profile` records V8's sampling
// profile over the phase and splits the CPU by entry (the outermost src/ file of each sample's
// stack: the channel's object, the hosts', the shards'), so what ONE connection's own object
// needs a batch is measured apart from the hosts that run elsewhere on Cloudflare. A call's fixed
// cost is shared by the batches it carries, so it prints what a host call carried: 12.5 at the
// venue model, far fewer here where one thread runs all 32 hosts — `--markets 576 --rate 35` (9
// hosts, 20,160 offered a second) gives the venue's call size (docs/benchmarks.md#one-channel).
// Loopback only; bounded; it stops everything it started.
import { mkdirSync } from "node:fs";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { profileLines, startProfiler } from "./inspector.mjs";
import { option, percentile } from "./load.mjs";
import { openChannel } from "./publisher.mjs";
import { bundleService, startService, work } from "./service.mjs";
import { venueFeed } from "./venue-feed.mjs";

const MARKETS = Number(option("markets", 2000));
const RATE = Number(option("rate", 10));
const SECONDS = Number(option("seconds", 20));
const WINDOW = 4_096;
const MESSAGE = 1_024;
/** A host's markets (GROUP_SIZE, src/core/market-groups.ts) and a channel's calls into it (GATHER_MS: 50 a second while it has batches). */
const GROUP_SIZE = 64;
const HOST_CALLS_PER_SECOND = 50;
/** What a host call carries at the venue model: 20,000 batches a second over its 32 hosts. */
const VENUE_BATCHES_PER_CALL = 20_000 / (Math.ceil(2_000 / GROUP_SIZE) * HOST_CALLS_PER_SECOND);
const HOSTS = Math.ceil(MARKETS / GROUP_SIZE);
const asJson = process.argv.includes("--json");
const PROFILE = process.argv.includes("--profile");
const INSPECTOR_PORT = 9340;
const log = (...line) => {
  if (!asJson) console.log(...line);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What runs under the channel's object: its entry, its gathered calls out, and what a session's call does in its caller's turn. */
const CHANNEL_ENTRIES = ["src/publish/publish-channel-object.ts", "src/publish/host-calls.ts", "src/market/ingest.ts", "src/rpc-sessions/session-link.ts"];
const SHARED = ["(garbage collector)", "(program)"];

/**
 * The channel's CPU a batch on a thread of its own: its entries' samples, plus the collector's and
 * the runtime's unattributed time in proportion to its share of the attributed (on Cloudflare the
 * hosts' garbage is collected on their threads, not the channel's).
 */
function channelShare(byEntry) {
  const us = new Map(byEntry);
  const ownUs = CHANNEL_ENTRIES.reduce((sum, entry) => sum + (us.get(entry) ?? 0), 0);
  const sharedAll = SHARED.reduce((sum, entry) => sum + (us.get(entry) ?? 0), 0);
  const attributed = byEntry.reduce((sum, [entry, value]) => sum + (SHARED.includes(entry) ? 0 : value), 0);
  const sharedUs = attributed > 0 ? (sharedAll * ownUs) / attributed : 0;
  const totalUs = ownUs + sharedUs;
  return { ownUs: round(ownUs), sharedUs: round(sharedUs), totalUs: round(totalUs), batchesPerSecond: Math.round(1e6 / Math.max(1, totalUs)) };
}

const round = (value) => Math.round(value * 10) / 10;

async function main() {
  mkdirSync(work, { recursive: true });
  log("bundling the service with wrangler (deploy --dry-run)…");
  const script = bundleService(asJson);
  const service = await startService(script, { DEMO_FEED: "off", METRICS: "off" }, PROFILE ? { inspectorPort: INSPECTOR_PORT } : {});
  try {
    const { url } = service;
    await listVenue({ url, token: "bench-admin-token", count: MARKETS, headers: { "CF-Connecting-IP": "10.90.0.1" } });
    const key = await issuePublishKey(url, "bench-admin-token", { label: "bench channel" });
    const channel = openChannel(url, key, "10.90.0.2");
    await channel.opened;
    const markets = Array.from({ length: MARKETS }, (_, i) => venueFeed(`V${i}USDT`, [2, 3, 4][i % 3], [3, 2, 1][i % 3], 100 + i, 20));
    log(`${MARKETS} markets listed; their books from a snapshot…`);
    for (let i = 0; i < markets.length; i += MESSAGE) await Promise.all(channel.sendMany(markets.slice(i, i + MESSAGE).map((m) => m.snapshot())));

    log(`offering ${MARKETS} × ${RATE} = ${MARKETS * RATE} batches a second over one channel for ${SECONDS} s…`);
    const latencies = [];
    const refused = {};
    const inFlight = new Set();
    let offered = 0;
    let sent = 0;
    let due = 0;
    let turn = 0;
    const profiler = PROFILE ? await startProfiler(INSPECTOR_PORT, "channel") : undefined;
    const cpu = service.cpuSeconds();
    const started = performance.now();
    let last = started;
    while (performance.now() - started < SECONDS * 1000) {
      const now = performance.now();
      const arriving = ((now - last) * MARKETS * RATE) / 1000;
      offered += arriving;
      due += arriving;
      last = now;
      const n = Math.min(Math.floor(due), WINDOW - channel.unanswered);
      if (n > 0) {
        due -= n;
        sent += n;
        const bodies = Array.from({ length: n }, () => markets[turn++ % markets.length].batch());
        for (let i = 0; i < bodies.length; i += MESSAGE) {
          for (const answer of channel.sendMany(bodies.slice(i, i + MESSAGE))) {
            const tracked = answer.then(
              ({ ms }) => latencies.push(ms),
              (error) => {
                const code = /"code":"(\w+)"/.exec(String(error.message))?.[1] ?? "error";
                refused[code] = (refused[code] ?? 0) + 1;
              },
            );
            inFlight.add(tracked);
            tracked.finally(() => inFlight.delete(tracked));
          }
        }
      }
      await sleep(Math.max(1, 20 - (performance.now() - now)));
    }
    const elapsed = (performance.now() - started) / 1000;
    const acknowledgedInPhase = latencies.length;
    await Promise.all(inFlight);
    const cpuSeconds = service.cpuSeconds() - cpu;
    const profile = profiler ? await profiler.stop() : undefined;
    channel.close();
    const result = {
      markets: MARKETS,
      rate: RATE,
      seconds: SECONDS,
      offeredPerSecond: Math.round(offered / elapsed),
      sentPerSecond: Math.round(sent / elapsed),
      acknowledgedPerSecond: Math.round(acknowledgedInPhase / elapsed),
      acknowledged: latencies.length,
      heldBackByWindow: Math.round(due),
      refused,
      ackP50Ms: percentile(latencies, 50),
      ackP99Ms: percentile(latencies, 99),
      cpuUsPerBatch: Math.round((cpuSeconds * 1e6) / Math.max(1, latencies.length)),
      // Every host has batches every gathering at these rates, so its calls are 50 a second.
      batchesPerHostCall: round(acknowledgedInPhase / elapsed / (HOSTS * HOST_CALLS_PER_SECOND)),
    };
    if (profile) {
      result.profile = profileLines(profile, script, latencies.length);
      result.channel = channelShare(result.profile.byEntry);
    }
    if (asJson) console.log(JSON.stringify(result));
    else {
      log(
        `offered ${result.offeredPerSecond}/s, sent ${result.sentPerSecond}/s, acknowledged ${result.acknowledgedPerSecond}/s (${result.acknowledged} in all); still held back by the window at the end: ${result.heldBackByWindow}`,
      );
      log(`refused: ${JSON.stringify(refused)}; ack p50 ${result.ackP50Ms} ms, p99 ${result.ackP99Ms} ms; workerd CPU ${result.cpuUsPerBatch} µs a batch`);
      log(
        `a host call carried ${result.batchesPerHostCall} batches (${HOSTS} hosts, ${HOST_CALLS_PER_SECOND} calls a second each; at the venue model ${VENUE_BATCHES_PER_CALL})`,
      );
    }
    if (profile && !asJson) {
      log(`\nCPU sampled a batch by entry (the outermost src/ file on the stack; ${result.profile.sampledUsPerBatch} µs a batch sampled, idle apart):`);
      for (const [entry, us] of result.profile.byEntry) log(`${String(us).padStart(8)} µs  ${entry}`);
      log("\nby source file (self time):");
      for (const [file, us] of result.profile.byFile) log(`${String(us).padStart(8)} µs  ${file}`);
      const { ownUs, sharedUs, totalUs, batchesPerSecond } = result.channel;
      log(
        `\nthe channel's own: ${ownUs} µs a batch (${CHANNEL_ENTRIES.join(", ")}) + ${sharedUs} µs, its share of the collector and (program) = ${totalUs} µs: about ${batchesPerSecond} batches a second on a thread of its own (the venue model: 20,000)`,
      );
    }
    if (refused.RATE_LIMITED) process.exitCode = 1;
  } finally {
    await service.mf.dispose();
  }
}

await main();
