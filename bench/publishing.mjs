// The shared objects under synthetic publishing, for `npm run bench -- --markets N`: the service
// with the demo feed publishing every listed market and WebSocket clients subscribed across the
// shards; the calls into the price index and the shards (from the group relays inside the market hosts) are read from the
// service's own counters (GET /admin/isolate: locally every object runs in the one isolate).
import WebSocket from "ws";
import { startService } from "./service.mjs";

const ADMIN = { Authorization: "Bearer bench-admin-token", "CF-Connecting-IP": "10.250.0.1" };
const SECONDS = 10;
const WARM_SECONDS = 5;
const CLIENTS = 20;
const STREAMS_PER_CLIENT = 50;
const SHARDS = 4; // STREAM_SHARDS in wrangler.toml

const counters = async (url) => (await (await fetch(`${url}/admin/isolate`, { headers: ADMIN })).json()).objectCalls;
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @param {string} script the service bundle
 * @param {{ markets: number, direct: boolean, log: (...line: unknown[]) => void, listVenue: (url: string) => Promise<void> }} options
 */
export async function measurePublishing(script, { markets, direct, log, listVenue }) {
  log(`publishing: a service with the demo feed publishing all ${markets} markets…`);
  const service = await startService(script, { DEMO_FEED: "on", DEMO_MARKETS: "*" }, { direct });
  const sockets = [];
  let messages = 0;
  try {
    await listVenue(service.url);
    // Clients from distinct addresses (so across the shards), each on 50 markets' trades.
    const wsUrl = service.url.replace(/^http/, "ws");
    for (let c = 0; c < CLIENTS; c++) {
      const streams = Array.from({ length: STREAMS_PER_CLIENT }, (_, i) => `trades.V${(c * STREAMS_PER_CLIENT + i) % (markets - 7)}USDT`);
      const ws = new WebSocket(`${wsUrl}/api/ws?streams=${streams.join(",")}`, { headers: { "CF-Connecting-IP": `10.252.${c}.1` } });
      ws.on("message", () => {
        messages += 1;
      });
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      sockets.push(ws);
    }
    await pause(WARM_SECONDS * 1000);
    const before = await counters(service.url);
    const messagesBefore = messages;
    await pause(SECONDS * 1000);
    const after = await counters(service.url);
    const delta = (name) => after[name] - before[name];
    const updates = delta("ingest");
    const round = (n, digits = 1) => Number(n.toFixed(digits));
    return {
      markets,
      seconds: SECONDS,
      subscribers: CLIENTS,
      streams: CLIENTS * STREAMS_PER_CLIENT,
      shards: SHARDS,
      groups: Math.ceil(markets / 64),
      updatesPerSecond: round(updates / SECONDS),
      callsPerSecond: { priceIndex: round(delta("priceIndex") / SECONDS), shard: round(delta("shard") / SECONDS) },
      perUpdate: {
        priceIndex: round(delta("priceIndex") / updates, 4),
        shardEach: round(delta("shard") / SHARDS / updates, 4),
      },
      messagesPerSecond: round((messages - messagesBefore) / SECONDS),
    };
  } finally {
    for (const ws of sockets) ws.close();
    await service.mf.dispose();
  }
}
