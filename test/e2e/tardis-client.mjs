// Runs tardis-dev, unchanged, against the service (test/e2e/tardis.test.ts): configured only by
// init({ endpoint, datasetsEndpoint }), in a process of its own that trusts `npm start`'s local
// certificate (NODE_EXTRA_CA_CERTS: tardis-dev downloads over HTTPS, from worker threads too).
// Prints one JSON line: what `replay` and `replayNormalized` (with the book tardis-dev builds)
// read, and the files `downloadDatasets` wrote.
import { readdirSync } from "node:fs";

const ask = JSON.parse(process.argv[2]);
// init before tardis-dev loads: its downloadDatasets reads the options once, when it is loaded (13.x; docs/tardis.md#tardis-dev).
const { init } = await import("tardis-dev/dist/options.js");
init({ endpoint: `${ask.httpsUrl}/tardis/v1`, datasetsEndpoint: `${ask.httpsUrl}/tardis/v1/datasets`, cacheDir: ask.cacheDir });
const { compute, computeBookSnapshots, downloadDatasets, normalizeBookChanges, normalizeTrades, replay, replayNormalized } = await import("tardis-dev");

const raw = { lines: 0, streams: {} };
for await (const { message } of replay({
  exchange: "binance",
  from: ask.from,
  to: ask.to,
  filters: [
    { channel: "trade", symbols: [ask.symbol.toLowerCase()] },
    { channel: "depth", symbols: [ask.symbol.toLowerCase()] },
    { channel: "depthSnapshot", symbols: [ask.symbol.toLowerCase()] },
  ],
})) {
  raw.lines += 1;
  raw.streams[message.stream] = (raw.streams[message.stream] ?? 0) + 1;
}

// A snapshot of depth N holds N places, the ones past the book's levels empty.
const levels = (side) => side.filter((level) => level?.price !== undefined).map((level) => [level.price, level.amount]);
const trades = [];
const books = [];
const normalized = replayNormalized({ exchange: "binance", symbols: [ask.symbol], from: ask.from, to: ask.to }, normalizeTrades, normalizeBookChanges);
for await (const message of compute(normalized, computeBookSnapshots({ depth: 1000, interval: 0 }))) {
  if (message.type === "trade")
    trades.push({ id: message.id, price: message.price, amount: message.amount, side: message.side, time: message.timestamp.valueOf() });
  if (message.type === "book_snapshot") {
    books.push({ time: message.timestamp.valueOf(), bids: levels(message.bids), asks: levels(message.asks) });
  }
}

let datasets = [];
if (ask.datasetsDay) {
  const next = new Date(Date.parse(ask.datasetsDay) + 86_400_000).toISOString().slice(0, 10);
  await downloadDatasets({
    exchange: "binance",
    dataTypes: ask.dataTypes,
    from: ask.datasetsDay,
    to: next,
    symbols: [ask.symbol],
    downloadDir: ask.downloadDir,
  });
  datasets = readdirSync(ask.downloadDir);
}
console.log(JSON.stringify({ raw, trades, books, datasets }));
