// `npm run bench:ws -- --markets 2000 [-- --clients 1000] [-- --seconds 10] [-- --json]`
//
// The calls from the group relays into the stream shards at venue scale (docs/capacity.md#a-million-subscribers),
// placed by market group as built and, in the same run, placed by principal as before (the same
// number of shards as there are groups, so only the placement differs). 2,000 markets listed;
// N clients on one market's book, trades and ticker each, spread as a venue's are: market ranks
// drawn from a Zipf law (a few hot markets, a long tail), the ranks shuffled over the listing so
// hot markets fall in any group; five clients per address. A publisher moves every subscribed
// market once a second over one `/v1/publish` connection (the others would make no shard
// call however they moved). Counted from the shards' own counter
// (`mds_relay_shard_calls_total` of `GET /admin/metrics`, whose scrape hands every shard's counts
// on): relay→shard calls a second, against the target 2 × (groups with a subscribed changed
// market) × 20 ticks a second; and shards per relay from the placement rule. Loopback only, bounded.
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { fnv1a } from "./load.mjs";
import { sign } from "./signed-load.mjs";

const GROUP_SIZE = 64; // src/registry/model.ts
const TICKS_PER_SECOND = 20; // SHARD_TICK_MS = 50 in src/groups/group-relay.ts
/**
 * Every subscribed market moves this often (the others would make no shard call however they
 * move): about 400 updates a second here, within what this machine applies while it fans out.
 * At 4 a second (1,600 asked, about 1,000 applied) the one workerd process is saturated and the
 * streams starve (docs/benchmarks.md#placement).
 */
const UPDATES_PER_MARKET_PER_SECOND = 1;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Five clients per address. */
const ipOf = (n) => {
  const a = Math.floor(n / 5);
  return `10.${140 + (a >> 16)}.${(a >> 8) & 255}.${a & 255}`;
};

/** A deterministic pseudo-random source, so both placements see the same clients. */
function randomFrom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 2 ** 32;
  };
}

/** For each client, the listing index of its market: Zipf ranks (s = 1) over a shuffled listing. */
function marketsOfClients(clients, markets) {
  const random = randomFrom(7);
  const order = Array.from({ length: markets }, (_, i) => i);
  for (let i = markets - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const weights = order.map((_, rank) => 1 / (rank + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const cumulative = [];
  let sum = 0;
  for (const w of weights) cumulative.push((sum += w / total));
  return Array.from({ length: clients }, () => {
    const r = random();
    let lo = 0;
    let hi = markets - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < r) lo = mid + 1;
      else hi = mid;
    }
    return order[lo];
  });
}

async function relayShardCalls(url) {
  const text = await (
    await fetch(`${url}/admin/metrics`, { headers: { Authorization: "Bearer bench-admin-token", "CF-Connecting-IP": "10.250.0.20" } })
  ).text();
  return Number(/^mds_relay_shard_calls_total (\d+)/m.exec(text)?.[1] ?? 0);
}

/** One run: a fresh service with `placement`, the clients, the publisher for `seconds`; the counted calls. */
async function run({ WebSocket, bundle, startService, placement, clients, markets, seconds, log }) {
  const groups = Math.ceil(markets / GROUP_SIZE);
  const vars = { DEMO_FEED: "off", STREAM_PLACEMENT: placement, ...(placement === "principal" ? { STREAM_SHARDS: String(groups) } : {}) };
  const service = await startService(bundle, vars, { direct: true });
  const sockets = [];
  try {
    await listVenue({ url: service.url, token: "bench-admin-token", count: markets - 7, headers: { "CF-Connecting-IP": "10.250.0.21" } });
    const listed = (await (await fetch(`${service.url}/api/markets`, { headers: { "CF-Connecting-IP": "10.250.0.22" } })).json()).markets.map((m) => m.symbol);
    if (listed.length !== markets) throw new Error(`${listed.length} markets listed, not ${markets}`);
    const key = await issuePublishKey(service.url, "bench-admin-token", { label: "venue ws bench" });
    const timestamp = String(Date.now());
    const publisher = new WebSocket(
      `${service.url.replace(/^http/, "ws")}/v1/publish?apiKey=${key.id}&timestamp=${timestamp}&signature=${sign(key.secret, timestamp, "GET", "/v1/publish")}`,
      { headers: { "CF-Connecting-IP": "10.250.0.23" } },
    );
    await new Promise((resolve, reject) => {
      publisher.once("open", resolve);
      publisher.once("error", reject);
    });
    let unanswered = 0;
    let answered = 0;
    let refusedBatches = 0;
    let firstRefusal;
    publisher.on("message", (data) => {
      unanswered -= 1;
      const answer = JSON.parse(String(data));
      if (answer.error) {
        refusedBatches += 1;
        firstRefusal ??= JSON.stringify(answer.error);
      } else answered += 1;
    });
    const sequences = new Array(markets).fill(0);
    const move = (i) => {
      const sequence = ++sequences[i];
      const level = [(100 + (sequence % 10) / 100).toFixed(2), `${1 + (sequence % 5)}.000`];
      const book =
        sequence === 1
          ? { type: "snapshot", sequence, bids: [["99.00", "1.000"]], asks: [["101.00", "1.000"]] }
          : { type: "delta", sequence, bids: sequence % 2 ? [level] : [], asks: [] };
      unanswered += 1;
      publisher.send(JSON.stringify({ id: `${i}-${sequence}`, symbol: listed[i], book: [book] }));
    };
    for (let i = 0; i < markets; i++) move(i);
    for (let i = 0; i < 200 && unanswered > 0; i++) await sleep(50);

    const chosen = marketsOfClients(clients, markets);
    const wsBase = service.url.replace(/^http/, "ws");
    let snapshots = 0;
    let received = 0;
    for (let n = 0; n < clients; n += 50) {
      await Promise.all(
        chosen.slice(n, n + 50).map((market, k) => {
          const ip = ipOf(n + k);
          const symbol = listed[market];
          const socket = new WebSocket(`${wsBase}/api/ws?streams=book.${symbol},trades.${symbol},ticker.${symbol}`, { headers: { "CF-Connecting-IP": ip } });
          sockets.push(socket);
          socket.on("message", (data) => {
            received += 1;
            if (String(data).includes('"type":"snapshot"')) snapshots += 1;
          });
          return new Promise((resolve, reject) => {
            socket.once("open", resolve);
            socket.once("error", reject);
          });
        }),
      );
    }
    for (let i = 0; i < 200 && snapshots < clients; i++) await sleep(50);
    const subscribed = [...new Set(chosen)];
    log(
      `${placement}: ${clients} clients on ${subscribed.length} markets of ${new Set(chosen.map((m) => Math.floor(m / GROUP_SIZE))).size} groups; moving each ${UPDATES_PER_MARKET_PER_SECOND} times a second…`,
    );

    const before = await relayShardCalls(service.url);
    const answeredBefore = answered;
    const receivedBefore = received;
    const started = performance.now();
    const everyMs = 1000 / UPDATES_PER_MARKET_PER_SECOND;
    while (performance.now() - started < seconds * 1000) {
      const at = performance.now();
      if (unanswered < 2000) for (const i of subscribed) move(i);
      await sleep(Math.max(0, everyMs - (performance.now() - at)));
    }
    for (let i = 0; i < 200 && unanswered > 0; i++) await sleep(50);
    await sleep(200); // the last tick's calls
    const elapsed = (performance.now() - started) / 1000;
    const calls = (await relayShardCalls(service.url)) - before;
    if (refusedBatches > 0) throw new Error(`${refusedBatches} batches refused: ${firstRefusal}`);
    const updatesPerSecond = Math.round((answered - answeredBefore) / elapsed);
    const messagesPerClientPerSecond = Number(((received - receivedBefore) / clients / elapsed).toFixed(1));
    publisher.close();

    // Shards per relay, from the placement rule: the shards holding a subscriber of each group's markets.
    const shardsByGroup = new Map();
    chosen.forEach((market, n) => {
      const group = Math.floor(market / GROUP_SIZE);
      const principal = `ip:${ipOf(n)}`;
      const shard = placement === "group" ? `group-${group}-shard-0` : `shard-${fnv1a(principal) % groups}`;
      shardsByGroup.set(group, (shardsByGroup.get(group) ?? new Set()).add(shard));
    });
    const subscribedGroups = shardsByGroup.size;
    return {
      relayShardCallsPerSecond: Math.round(calls / elapsed),
      updatesPerSecond,
      messagesPerClientPerSecond,
      subscribedGroups,
      target: 2 * subscribedGroups * TICKS_PER_SECOND,
      shardsPerRelay: Number(([...shardsByGroup.values()].reduce((n, s) => n + s.size, 0) / subscribedGroups).toFixed(1)),
      seconds: Number(elapsed.toFixed(1)),
    };
  } finally {
    for (const s of sockets) s.terminate();
    await service.mf.dispose();
  }
}

/** Both runs, placed by group and by principal; returns the report. */
export async function measurePlacement({ clients, markets, seconds, log }) {
  const { default: WebSocket } = await import("ws");
  const { bundleService, startService } = await import("./service.mjs");
  log(`bundling; ${markets} markets, ${clients} clients, placed by group and then by principal`);
  const bundle = bundleService(true);
  const byGroup = await run({ WebSocket, bundle, startService, placement: "group", clients, markets, seconds, log });
  const byPrincipal = await run({ WebSocket, bundle, startService, placement: "principal", clients, markets, seconds, log });
  return {
    clients,
    markets,
    relayShardCallsPerSecond: byGroup.relayShardCallsPerSecond,
    relayShardCallsPerSecondByPrincipal: byPrincipal.relayShardCallsPerSecond,
    groupsWithSubscribedChangedMarkets: byGroup.subscribedGroups,
    target: byGroup.target,
    shardsPerRelay: byGroup.shardsPerRelay,
    shardsPerRelayByPrincipal: byPrincipal.shardsPerRelay,
    updatesPerSecond: byGroup.updatesPerSecond,
    messagesPerClientPerSecond: byGroup.messagesPerClientPerSecond,
    messagesPerClientPerSecondByPrincipal: byPrincipal.messagesPerClientPerSecond,
    updatesPerSecondByPrincipal: byPrincipal.updatesPerSecond,
    seconds: byGroup.seconds,
  };
}
