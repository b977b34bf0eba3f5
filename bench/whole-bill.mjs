// The whole bill's phases for `npm run bench:cost` (docs/capacity.md#the-whole-bill): what a venue
// pays beyond its write path, each line counted from a phase of the run that does it, scaled to the
// stated load (VENUE_LOAD) the way the write path is — per request, per subscriber-second, per
// host restart, per market-day of trades, per segment of book changes.
//
//   reads       — public REST (the service's and Binance's routes) from many addresses, signed REST
//                 with real keys, Binance's WebSocket API: every Workers request, guard call,
//                 market refresh, KV and R2 read, Analytics Engine point and CPU second counted;
//   history     — backtests: books at moments of the busy market's closed history, a replay, catch-ups
//                 into live, Tardis's feed (bench/bill-history.mjs), each counted, priced per unit at the venue's share;
//   subscribers — anonymous and keyed stream connections opened, held across key checks, closed;
//   files       — a day's files of markets with two sizes of day (the daily-files Workflow, as
//                 POST /admin/archive starts it), an hour's book files of markets with few and many
//                 segments (the book-files Workflow), the trade archive moving chunks to R2;
//   restart     — the runtime killed and started on the same state: every host's first commits.
//
// Prices are PRICES (bench/prices.mjs). Loopback only.
import { TOKEN } from "./bill-counts.mjs";
import { filesPhase, restartPhase } from "./bill-files.mjs";
import { historyPhase } from "./bill-history.mjs";
import { countsComplete, VENUE_LOAD } from "./bill-price.mjs";
import { answeredOk, keyLedger, makeKeys, readPhase, subscriberPhase } from "./bill-reads.mjs";
import { openedChannel } from "./publisher.mjs";
import { startService } from "./service.mjs";

/**
 * Runs the whole bill's phases on the cost bench's service (after its write-path phases): reads,
 * subscribers, files, and last the restart, which hands back the restarted service. `markets`:
 * the venue's feeds (their `batch`), `busy` the busy market's, `key` the publishing key.
 */
// A hundredth of the venue's reads: what this machine's one workerd thread answers without queueing
// (a fiftieth queued signed requests past their 5 s window, and their refusals were counted as reads).
const READ_SCALE = 1 / 100;
const MARKETS_A_HOST = 64;
/** The history phase's books a second: at the venue's read scale, a hundredth of its 100 a second (VENUE_LOAD.historyReadsPerSecond) is too few to count. */
const HISTORY_READS_A_SECOND = 20;

/**
 * The run's gates (`ADDRESS_GATES`): as many as keep each gate's session into a host as busy as at
 * the venue, where the public, signed and WebSocket API reads over 32 gates and 32 hosts are about
 * 11.7 a second a session. A session idle for SESSION_IDLE_MS closes and the next read opens
 * another (a billed call): a hundredth of the reads spread over 32 gates and 2 hosts would open one
 * on about a third of them, which the venue's gates, never idle a second, do not.
 */
export function gatesForRun(markets) {
  const L = VENUE_LOAD;
  const gated = L.publicPerSecond + L.signedPerSecond + L.wsApiPerSecond;
  const perSession = gated / (L.gates * L.hosts);
  const hosts = Math.ceil(markets / MARKETS_A_HOST);
  return Math.max(1, Math.round((gated * READ_SCALE) / (hosts * perSession)));
}

export async function wholeBill(service, { channels, markets, busy, busySpan, key, persist, scriptPath, vars, log }) {
  const url = service.url;
  const symbols = markets.map((m) => m.symbol);
  // Signed reads over 200 keys at the venue's 0.05 a key-second (1,000 a second over 20,000 keys), 20 more for keyed subscribers.
  log("the whole bill: keys for signed reads and keyed subscribers…");
  // A key's gate is named by its ledger (src/core/object-ids.ts keyGate): the signed reads' keys are
  // those whose gate is one of the run's gates, as at the venue every key gate is one of its address
  // gates, its sessions into the hosts as busy as the public reads'. Keys on all 32 gates would leave
  // 27 sessions idle in a run of 5 and count a host call for most of their refreshes (docs/capacity.md#the-whole-bill).
  const runGates = Number(vars.ADDRESS_GATES ?? VENUE_LOAD.gates);
  const readKeys = await makeKeys(url, 200, ["read", "stream"], "10.85.0", (key) => keyLedger(key.id) < runGates);
  const keys = [...readKeys, ...(await makeKeys(url, 20, ["read", "stream"], "10.85.1"))];
  const listed = await (await fetch(`${url}/api/markets`, { headers: { "CF-Connecting-IP": "10.70.0.4" } })).json();
  const marketList = listed.markets ?? listed;
  const config = (symbol) => {
    const m = marketList.find((x) => x.symbol === symbol);
    if (!m) throw new Error(`${symbol} is not listed`);
    return { symbol, priceScale: m.priceScale, quantityScale: m.quantityScale, price: 10 ** m.priceScale * 50, quantity: (1).toFixed(m.quantityScale) };
  };
  const L = VENUE_LOAD;
  const scale = READ_SCALE;
  log(
    `reads: ${L.publicPerSecond * scale} public, ${L.signedPerSecond * scale} signed, ${L.wsApiPerSecond * scale} WebSocket API requests a second through ${vars.ADDRESS_GATES ?? L.gates} gates, 65 s and 60 s counted…`,
  );
  const reads = await readPhase(service, TOKEN, {
    markets: symbols,
    keys: keys.slice(0, 200),
    rate: L.publicPerSecond * scale,
    signedRate: L.signedPerSecond * scale,
    wsRate: L.wsApiPerSecond * scale,
    warm: 65,
    seconds: 60,
    flushMs: Number(vars.METRICS_FLUSH_MS ?? 10_000),
  });
  log(`  answers: ${JSON.stringify(reads.statuses)}; in the counted window: ${JSON.stringify(reads.windowStatuses)}`);
  if (Object.keys(reads.notOkAt).length) log(`  not 2xx, by 5 s from the warm-up's start: ${JSON.stringify(reads.notOkAt)}`);
  // Fewer requests in the keys' usage than signed requests their gates took: counts went missing.
  const told = countsComplete(reads);
  log(
    `  signed: ${reads.sent.signed} sent in the window, ${reads.sent.signedUnauthenticated} refused before a gate took them; the keys' usage counted ${reads.usage.counted} of ${reads.usage.taken} taken in the phase (${told.toFixed(3)})`,
  );
  if (Math.abs(told - 1) > 0.02)
    log(`  WARNING: the keys' usage counted ${told.toFixed(3)} of the signed requests taken, not 1: the read phase's counts are incomplete`);
  const answered = Object.entries(reads.windowStatuses).filter(([status]) => /^(ws )?[0-9]+$/.test(status));
  const failed = answered.filter(([status]) => !answeredOk(status)).reduce((sum, [, n]) => sum + n, 0);
  const answers = answered.reduce((sum, [, n]) => sum + n, 0);
  // A counted window whose answers are not 2xx counts refusals, not reads: the bench fails.
  if (failed > answers / 100)
    throw new Error(`reads: ${failed} of ${answers} answers in the counted window were not 2xx: ${JSON.stringify(reads.windowStatuses)}`);
  log(`history: ${HISTORY_READS_A_SECOND} books a second at moments of ${busy.symbol}'s closed history, a replay of a minute, five catch-ups into live…`);
  const history = await historyPhase(service, TOKEN, {
    symbol: busy.symbol,
    ...busySpan,
    rate: HISTORY_READS_A_SECOND,
    seconds: 30,
    flushMs: Number(vars.METRICS_FLUSH_MS ?? 10_000),
  });
  log(
    `  books: ${JSON.stringify(history.books.statuses)}, read at ${JSON.stringify(history.books.readAt)}, closed reads by source ${JSON.stringify(history.books.closedReads)}, R2 class B ${history.books.r2.bStandard}, host calls ${history.books.calls.market ?? 0}`,
  );
  log(`  replay: ${history.replay.messages} messages, ${history.replay.bytes} bytes; catch-ups: ${JSON.stringify({ ...history.catchUps, grown: undefined })}`);
  log(
    `  tardis feed: ${history.feed.minutes} minutes, ${JSON.stringify(history.feed.statuses)}, read at ${JSON.stringify(history.feed.readAt)}, ${history.feed.bytes} bytes (decoded), R2 class B ${history.feed.r2.bStandard}, host calls ${history.feed.calls.market ?? 0}`,
  );
  log("subscribers: 200 anonymous and 20 keyed connections, held a minute…");
  // The keyed ones on one group's markets, so on one shard: its duties are a shard's.
  const subscribers = {
    ...(await subscriberPhase(service, TOKEN, { markets: symbols.slice(0, 60), keys: keys.slice(200, 220), anonymous: 200, seconds: 60 })),
    // The shards they were placed on: the group's (its 220 addresses and keys reach every one).
    shards: Number(vars.STREAM_GROUP_SHARDS ?? 1),
  };
  log("files: two sizes of day, the archive, an hour's book files…");
  const files = await filesPhase(service, TOKEN, channels[0], {
    dayGroups: [
      { markets: [config("ETHUSDT"), config("SOLUSDT")], trades: 2_000 },
      { markets: [config("XRPUSDT"), config("ETHBTC")], trades: 20_000 },
    ],
    archiveMarket: config("SOLBTC"),
    archiveTrades: 22_000,
    hourMarkets: [config(busy.symbol), ...symbols.slice(0, 3).map(config)],
  });
  log("restart: the runtime stopped and started on the same state…");
  const all = await (await fetch(`${url}/admin/markets`, { headers: { Authorization: `Bearer ${TOKEN}`, "CF-Connecting-IP": "10.70.0.2" } })).json();
  const benchHosts = Math.ceil((all.markets ?? []).length / 64);
  for (const channel of channels) channel.close();
  const restart = await restartPhase(service, TOKEN, () => startService(scriptPath, vars, { persist, restart: true }), {
    seconds: 20,
    reopen: async (restarted) => {
      const reopened = await Promise.all(Array.from({ length: 4 }, (_, i) => openedChannel(restarted.url, key, `10.71.1.${i + 1}`)));
      return {
        channels: reopened,
        firstBatches: () => Promise.all([...markets, busy].map((m, i) => reopened[i % reopened.length].send({ ...m.batch(1, 1) }))),
      };
    },
  });
  return { service: restart.service, channels: restart.channels, phases: { reads, history, subscribers, files, restart, benchHosts } };
}
