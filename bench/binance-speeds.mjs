// `npm run bench:binance [-- --seconds 10] [-- --json]`
//
// Binance's stream speeds and message sizes as a Binance client meets them (docs/binance.md#streams):
// a publisher changes one market's book about ten times a second over `/v1/publish`, and one
// combined connection counts the frames a second of `@depth`, `@depth@100ms`, `@depth5` and
// `@depth5@100ms` (Binance: 1, 10, 1, 10); then one SUBSCRIBE names 1,024 streams of 100 listed
// markets in one message and reports its bytes and answer (Binance: `{"result": null}`). Loopback
// only; bounded; it stops everything it started.
import { mkdirSync } from "node:fs";
import WebSocket from "ws";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { option } from "./load.mjs";
import { openChannel } from "./publisher.mjs";
import { bundleService, startService, work } from "./service.mjs";
import { venueFeed } from "./venue-feed.mjs";

const SECONDS = Number(option("seconds", 10));
const asJson = process.argv.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function socket(url, ip) {
  const ws = new WebSocket(url, { headers: { "CF-Connecting-IP": ip } });
  return new Promise((resolve, reject) => ws.once("open", () => resolve(ws)).once("error", reject));
}

async function main() {
  mkdirSync(work, { recursive: true });
  log("bundling the service with wrangler (deploy --dry-run)…");
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off", METRICS: "off" });
  try {
    const { url } = service;
    const ws = url.replace(/^http/, "ws");
    await listVenue({ url, token: "bench-admin-token", count: 100, headers: { "CF-Connecting-IP": "10.91.0.1" } });
    const key = await issuePublishKey(url, "bench-admin-token", { label: "bench binance speeds" });
    const channel = openChannel(url, key, "10.91.0.2");
    await channel.opened;
    const market = venueFeed("V5USDT", 4, 1, 105, 20);
    await Promise.all(channel.sendMany([market.snapshot()]));

    const names = ["v5usdt@depth", "v5usdt@depth@100ms", "v5usdt@depth5", "v5usdt@depth5@100ms"];
    const reader = await socket(`${ws}/binance/stream?streams=${names.join("/")}`, "10.91.0.3");
    const frames = Object.fromEntries(names.map((name) => [name, 0]));
    await sleep(500); // the greeting's partial books, not counted
    reader.on("message", (data) => {
      const stream = JSON.parse(String(data)).stream;
      if (stream in frames) frames[stream] += 1;
    });
    log(`publishing about 10 book changes a second to V5USDT for ${SECONDS} s…`);
    const started = performance.now();
    let changes = 0;
    while (performance.now() - started < SECONDS * 1000) {
      await Promise.all(channel.sendMany([market.batch(5, 0)]));
      changes += 1;
      await sleep(Math.max(0, 100 * changes - (performance.now() - started)));
    }
    const seconds = (performance.now() - started) / 1000;
    reader.close();
    channel.close();

    // One SUBSCRIBE of 1,024 names: 100 markets × 11 streams, the first 1,024.
    const kinds = ["trade", "aggTrade", "miniTicker", "ticker", "bookTicker", "avgPrice", "depth", "depth@100ms", "depth5", "kline_1m", "ticker_1h"];
    const all = Array.from({ length: 100 }, (_, i) => kinds.map((kind) => `v${i}usdt@${kind}`))
      .flat()
      .slice(0, 1024);
    const subscriber = await socket(`${ws}/binance/ws`, "10.91.0.4");
    const text = JSON.stringify({ method: "SUBSCRIBE", params: all, id: 1 });
    const answer = new Promise((resolve) =>
      subscriber.on("message", (data) => {
        const message = JSON.parse(String(data));
        if (message.id === 1) resolve(message);
      }),
    );
    subscriber.send(text);
    const result = {
      seconds: Math.round(seconds * 10) / 10,
      bookChangesPerSecond: Math.round((changes / seconds) * 10) / 10,
      framesPerSecond: Object.fromEntries(Object.entries(frames).map(([name, n]) => [name, Math.round((n / seconds) * 100) / 100])),
      subscribe: { names: all.length, bytes: text.length, answer: await answer },
    };
    subscriber.close();
    if (asJson) console.log(JSON.stringify(result));
    else {
      log(`${result.bookChangesPerSecond} book changes a second over ${result.seconds} s; frames a second:`, result.framesPerSecond);
      log(`one SUBSCRIBE of ${result.subscribe.names} names (${result.subscribe.bytes} bytes) answered ${JSON.stringify(result.subscribe.answer)}`);
    }
  } finally {
    await service.mf.dispose();
  }
}

await main();
