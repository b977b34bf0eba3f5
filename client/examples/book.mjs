// Keeps a local BTCUSDT order book in sync from the book stream (snapshot, deltas, sequence and
// checksum checks, resync on any gap) and prints its spread on each of the next 10 updates.
// Run: npm run example:book   (MDS_BASE_URL for another server; MDS_SYMBOL for another market)
import { MarketStream } from "@market-data-edge/client";

const baseUrl = process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
const symbol = process.env.MDS_SYMBOL ?? "BTCUSDT";
const WebSocket = globalThis.WebSocket ?? (await import("ws")).default;

const stream = new MarketStream({ baseUrl, WebSocket });
await new Promise((done) => {
  let updates = 0;
  const { close } = stream.book(symbol, {
    onUpdate: (book) => {
      const [bid, bidQty] = book.bestBid() ?? ["-", "-"];
      const [ask, askQty] = book.bestAsk() ?? ["-", "-"];
      const spread = bid !== "-" && ask !== "-" ? (Number(ask) - Number(bid)).toFixed(ask.split(".")[1]?.length ?? 0) : "-";
      console.log(
        `#${book.sequence}  bid ${bid} × ${bidQty}  ask ${ask} × ${askQty}  spread ${spread}  levels ${book.bids().length}/${book.asks().length}  checksum ${book.checksum()}`,
      );
      if (++updates === 10) {
        close();
        done();
      }
    },
    onResync: () => console.log("gap or checksum mismatch: asked for a fresh snapshot"),
  });
});
stream.close();
