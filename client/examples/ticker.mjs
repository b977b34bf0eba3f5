// Prints the BTCUSDT ticker, then its next three updates from the ticker stream.
// Run: npm run example:ticker   (MDS_BASE_URL for another server than http://127.0.0.1:8787)
import { MarketDataClient, MarketStream } from "@market-data-edge/client";

const baseUrl = process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
// Node ≥ 22, browsers, Deno, Bun and Workers have a WebSocket; Node 20 takes the `ws` package's.
const WebSocket = globalThis.WebSocket ?? (await import("ws")).default;

const client = new MarketDataClient({ baseUrl });
const ticker = await client.getTicker({ pair: "BTCUSDT" });
console.log(`BTCUSDT last ${ticker.lastPrice}  24h ${ticker.changePercent24h}%  high ${ticker.high24h}  low ${ticker.low24h}  volume ${ticker.volume24h}`);

const stream = new MarketStream({ client, WebSocket });
let updates = 0;
for await (const update of stream.ticker("BTCUSDT")) {
  console.log(`${new Date(update.closeTime).toISOString()}  last ${update.lastPrice}  bid ${update.bestBid}  ask ${update.bestAsk}`);
  if (++updates === 3) break;
}
stream.close();
