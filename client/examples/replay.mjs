// Replays the last hour of BTCUSDT's book (GET /api/replay, docs/history.md#replay) into a local
// book and prints its spread minute by minute: the narrowest, the widest and the last of each.
// Run: npm run example:replay   (MDS_BASE_URL for another server; MDS_SYMBOL for another market;
// MDS_FROM and MDS_TO in Unix ms for another hour)
import { replay } from "@market-data-edge/client";

const baseUrl = process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
const symbol = process.env.MDS_SYMBOL ?? "BTCUSDT";
const to = Number(process.env.MDS_TO ?? Date.now());
let from = Number(process.env.MDS_FROM ?? to - 3_600_000);
// Where the market's book history begins later than that (a new market, a fresh server): from there.
const asked = await fetch(`${baseUrl}/api/orderbook/${symbol}?at=${from}&depth=1`);
if (asked.status === 404) from = Math.max(from, (await asked.json()).firstTime ?? from);
const WebSocket = globalThis.WebSocket ?? (await import("ws")).default;

const minutes = new Map();
const ended = await replay({
  baseUrl,
  streams: [`book.${symbol}`],
  from,
  to,
  WebSocket,
  onBook: (_, book, message) => {
    const bid = book.bestBid();
    const ask = book.bestAsk();
    if (!bid || !ask) return;
    const spread = Number(ask[0]) - Number(bid[0]);
    const minute = new Date(Math.floor(Math.max(message.time ?? from, from) / 60_000) * 60_000).toISOString().slice(11, 16);
    const seen = minutes.get(minute) ?? { narrowest: spread, widest: spread, last: spread, updates: 0 };
    minutes.set(minute, { narrowest: Math.min(seen.narrowest, spread), widest: Math.max(seen.widest, spread), last: spread, updates: seen.updates + 1 });
  },
});
for (const [minute, { narrowest, widest, last, updates }] of minutes) {
  console.log(
    `${minute} UTC  spread narrowest ${narrowest.toPrecision(6)}  widest ${widest.toPrecision(6)}  last ${last.toPrecision(6)}  (${updates} messages)`,
  );
}
console.log(`${ended.messages} messages replayed from ${new Date(from).toISOString()} to ${new Date(to).toISOString()}`);
