// CCXT's own `binance` adapter, unchanged, pointed at this service's Binance dialect (docs/binance.md).
// Run against `npm start`: `npm run example:ccxt` (BASE_URL to point elsewhere).
import ccxt from "ccxt";
import { ccxtConfig } from "./ccxt-config.mjs";

const base = process.env.BASE_URL ?? "http://127.0.0.1:8787";
// Every URL CCXT's spot market data uses, the limits and one connection (ccxt-config.mjs, docs/binance.md#ccxt).
const exchange = new ccxt.pro.binance(ccxtConfig(base));

// CCXT needs this once for a plain ws:// URL (local development); not for wss://.
if (base.startsWith("http:")) await exchange.loadHttpProxyAgent();

const symbol = "BTC/USDT";
const markets = await exchange.loadMarkets();
console.log(`${Object.keys(markets).length} markets; ${symbol}: tick ${markets[symbol].precision.price}, step ${markets[symbol].precision.amount}`);
console.log("server time", new Date(await exchange.fetchTime()).toISOString());
const ticker = await exchange.fetchTicker(symbol);
console.log(`ticker: last ${ticker.last}, bid ${ticker.bid} × ${ticker.bidVolume}, ask ${ticker.ask} × ${ticker.askVolume}, 24h ${ticker.percentage}%`);
const book = await exchange.fetchOrderBook(symbol, 5);
console.log(`book #${book.nonce}: best bid ${book.bids[0]}, best ask ${book.asks[0]}`);
const trades = await exchange.fetchTrades(symbol, undefined, 3);
console.log("trades", trades.map((t) => `${t.side} ${t.amount} @ ${t.price}`).join(", "));
const candles = await exchange.fetchOHLCVWs(symbol, "1m", undefined, 3); // over the WebSocket API
console.log(
  "candles",
  candles.map(([time, open, high, low, close]) => `${new Date(time).toISOString().slice(11, 16)} o${open} h${high} l${low} c${close}`).join(" | "),
);

// A live order book: CCXT's Binance algorithm (a REST snapshot plus the buffered diff stream).
const seconds = Number(process.env.SECONDS ?? 10);
const until = Date.now() + seconds * 1000;
let updates = 0;
while (Date.now() < until) {
  const live = await exchange.watchOrderBook(symbol);
  updates += 1;
  if (updates % 20 === 1) console.log(`live book #${live.nonce}: ${live.bids[0]} / ${live.asks[0]}`);
}
const live = exchange.orderbooks[symbol];
const rest = await exchange.fetchOrderBook(symbol, 1000);
console.log(`${updates} live updates in ${seconds} s; the live book at #${live.nonce}, REST at #${rest.nonce}`);
await exchange.close();
