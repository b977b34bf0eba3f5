// Binance's official connector (@binance/connector), unchanged, pointed at this service's Binance dialect (docs/binance.md).
// Run against `npm start`: `node examples/binance/connector.mjs` (BASE_URL to point elsewhere).
import { Spot, WebsocketAPI, WebsocketStream } from "@binance/connector";

const base = process.env.BASE_URL ?? "http://127.0.0.1:8787";
const quiet = { debug() {}, info() {}, log() {}, warn() {}, error: console.error };

const client = new Spot("", "", { baseURL: `${base}/binance` });
const info = (await client.exchangeInfo({ symbol: "BTCUSDT" })).data;
console.log("BTCUSDT", info.symbols[0].status, info.symbols[0].filters.map((f) => f.filterType).join(", "));
const book = (await client.depth("BTCUSDT", { limit: 5 })).data;
console.log(`book #${book.lastUpdateId}: ${book.bids[0]} / ${book.asks[0]}`);
const ticker = (await client.ticker24hr("BTCUSDT")).data;
console.log(`24h: last ${ticker.lastPrice}, change ${ticker.priceChangePercent}%, volume ${ticker.volume}`);
const klines = (await client.klines("BTCUSDT", "1m", { limit: 2 })).data;
console.log("klines", klines.map((k) => `${k[1]}→${k[4]}`).join(", "));
try {
  await client.klines("BTCUSDT", "3m");
} catch (error) {
  console.log("3m klines:", error.response.status, JSON.stringify(error.response.data));
}

// Binance's WebSocket API: the same answers as REST, request and answer over one connection.
await new Promise((resolve) => {
  const api = new WebsocketAPI("", "", {
    logger: quiet,
    wsURL: `${base.replace(/^http/, "ws")}/binance/ws-api/v3`,
    callbacks: {
      open: () => api.tickerPrice({ symbol: "BTCUSDT" }),
      message: (text) => {
        console.log("ws-api ticker.price", JSON.stringify(JSON.parse(text).result));
        api.disconnect();
        resolve();
      },
    },
  });
});

// A live order book kept as Binance documents it: buffer the diff stream, take a REST snapshot, apply diffs after it.
const symbol = "btcusdt";
const buffered = [];
let local;
let applied = 0;
const apply = (side, levels) => {
  for (const [price, quantity] of levels) Number(quantity) === 0 ? side.delete(price) : side.set(price, quantity);
};
const stream = new WebsocketStream({
  logger: quiet,
  wsURL: `${base.replace(/^http/, "ws")}/binance`,
  callbacks: {
    message: (text) => {
      const event = JSON.parse(text);
      if (event.e !== "depthUpdate") return;
      if (!local) return void buffered.push(event);
      if (event.u <= local.lastUpdateId) return;
      if (event.U !== local.lastUpdateId + 1) throw new Error(`gap: ${local.lastUpdateId} then ${event.U}`);
      apply(local.bids, event.b);
      apply(local.asks, event.a);
      local.lastUpdateId = event.u;
      applied += 1;
    },
  },
});
stream.diffBookDepth(symbol, "100ms");
await new Promise((resolve) => setTimeout(resolve, 1000));
const snapshot = (await client.depth("BTCUSDT", { limit: 1000 })).data;
local = { lastUpdateId: snapshot.lastUpdateId, bids: new Map(snapshot.bids), asks: new Map(snapshot.asks) };
for (const event of buffered.splice(0)) stream.callbacks.message(JSON.stringify(event));
await new Promise((resolve) => setTimeout(resolve, Number(process.env.SECONDS ?? 5) * 1000));
stream.disconnect();
const rest = (await client.depth("BTCUSDT", { limit: 1000 })).data;
console.log(`${applied} diffs applied; local book at #${local.lastUpdateId}, REST at #${rest.lastUpdateId}`);
