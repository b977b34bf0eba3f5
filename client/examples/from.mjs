// Starts BTCUSDT's book an hour ago and brings it into live on one subscription (docs/streams.md#from-any-moment):
// prints the spread a minute at a time while it catches up (the narrowest, the widest and the last
// of each minute), then the moment it became live, then five live updates.
// Run: npm run example:from   (MDS_BASE_URL for another server; MDS_SYMBOL for another market;
// MDS_FROM in Unix ms for another moment, at most 24 h back)
import { MarketStream } from "@market-data-edge/client";

const baseUrl = process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
const symbol = process.env.MDS_SYMBOL ?? "BTCUSDT";
let from = Number(process.env.MDS_FROM ?? Date.now() - 3_600_000);
// Where the market's book history begins later than that (a new market, a fresh server): from there.
const asked = await fetch(`${baseUrl}/api/orderbook/${symbol}?at=${from}&depth=1`);
if (asked.status === 404) from = Math.max(from, (await asked.json()).firstTime ?? from);
const WebSocket = globalThis.WebSocket ?? (await import("ws")).default;

const spreadOf = (book) => {
  const bid = book.bestBid();
  const ask = book.bestAsk();
  return bid && ask ? Number(ask[0]) - Number(bid[0]) : undefined;
};
const minuteOf = (time) => new Date(Math.floor(time / 60_000) * 60_000).toISOString().slice(11, 16);
let minute;
let seen;
const printMinute = () => {
  if (seen)
    console.log(
      `${minute} UTC  spread narrowest ${seen.narrowest.toPrecision(6)}  widest ${seen.widest.toPrecision(6)}  last ${seen.last.toPrecision(6)}  (${seen.updates} messages)`,
    );
};

const stream = new MarketStream({ baseUrl, WebSocket });
let live = false;
let liveUpdates = 0;
await new Promise((done) => {
  const { close } = stream.book(symbol, {
    from,
    onUpdate: (book) => {
      const spread = spreadOf(book);
      if (spread === undefined) return;
      if (live) {
        console.log(`live #${book.sequence}  spread ${spread.toPrecision(6)}  checksum ${book.checksum()}`);
        if (++liveUpdates === 5) {
          close();
          done();
        }
        return;
      }
      const at = minuteOf(Math.max(book.time ?? from, from));
      if (at !== minute) {
        printMinute();
        minute = at;
        seen = { narrowest: spread, widest: spread, last: spread, updates: 0 };
      }
      seen = { narrowest: Math.min(seen.narrowest, spread), widest: Math.max(seen.widest, spread), last: spread, updates: seen.updates + 1 };
    },
    onLive: () => {
      printMinute();
      live = true;
      console.log(`live since ${new Date().toISOString()}: caught up from ${new Date(from).toISOString()} without a gap`);
    },
  });
});
stream.close();
