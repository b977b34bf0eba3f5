// `npm run bench:cost [-- --markets 100] [-- --seconds 60] [-- --flush-ms 10000] [-- --json] [-- --write-path] [-- --inspector-port N]`
//
// `--write-path`: the write path's phases only, not the whole bill's (reads, subscribers, files,
// restart): its figure in about 20 minutes, and `venueAll` absent. `--inspector-port`: V8's
// inspector on the service's runtime, for `node bench/heap-watch.mjs --port N` alongside.
//
// What the write path costs on Cloudflare, counted rather than estimated (docs/capacity.md#cost).
// Runs the deployable bundle on workerd (demo feed off, operator metrics on and handed on every
// `--flush-ms`, the deployed METRICS_FLUSH_MS by default: a holder's hand-over wakes its object,
// and what that writes is part of the bill; every object's rows and requests are counted in the
// isolate's holder, which each scrape hands on), lists `--markets` markets, attaches stream
// subscribers, publishes over /v1/publish in six phases, and reads the runtime's own counts from
// /admin/metrics (`mds_storage_rows_written_total`, `mds_storage_rows_read_total`,
// `mds_object_requests_total`, every object class, and `mds_storage_table_rows_written_total` by
// table) at the start and end of each phase's window:
//   busy    — one market, 50 batches/s of 100 level changes and 20 trades (the busy-market model), first;
//   group   — one group's markets at the venue model's own rate and batch (10 batches/s of 1 trade
//             and 5 level changes);
//   venue   — every market at that rate, for a whole cycle of each market's log (4,096 commits) in
//             whole minutes (7);
//   levels  — 4 batches/s of 50 level changes; trades — 4 batches/s of 20 trades;
//   slow    — 1 batch/s of 1 trade and 5 level changes (more market-seconds per batch).
// The others are `--seconds` each. Before the group phase the markets' logs are staggered over a
// cycle, so that their snapshots (every 4,096 commits) spread over the windows, as a venue's do,
// instead of coming together. Markets are hosted by group, 64 a group, and a group commits once a
// tick (docs/design.md#market-hosts). The venue model is priced from its own phase, part by part
// as counted, scaled to its 32 hosts and 2,000 markets: the hosts' own tables (the group's
// journal, its alarm and alarm record) and the shards per host-second, the markets' tables per
// market-second, the objects a venue has one of (the publisher channel, price index, metrics,
// registry, the key's guard) per second as measured, and the rows that what was written costs
// again when it goes (a trade block's row and index entry at the archive). The per-unit figures
// (`counted`: rows a batch, trade, level change, market-second) are a least-squares fit over the
// five phases besides busy, for reading only. Calls on an RPC session are not billed (the
// session's opening is); the publishers send each 20 ms slice's batches as one message (an
// array), and the venue's messages are its batches over the batches a message the run's publisher
// sent (measured, about 5: the model's 64 was what a publisher could pack, not what it did), 20 to
// a request.
// The busy phase *is* the busy-market model: its own counts are priced. R2's bytes a trade (its
// archive chunk, its daily zips) and a level change (its segment, its hourly zips) are measured on
// the formats the service writes, over walking prices; the zips are priced in Infrequent Access.
// SQLite's storage is projected from the bytes the venue's hosts hold after the run (their files,
// read once the runtime has stopped). Storage is priced in month STORAGE_MONTH (24), month 12 beside.
// Prices are Cloudflare's published rates (PRICES, with the date read).
// Loopback only; it stops everything it started.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { deflateRawSync, gunzipSync, gzipSync } from "node:zlib";
import WebSocket from "ws";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { billedIn, grew, TOKEN } from "./bill-counts.mjs";
import { priceVenueAll, VENUE_LOAD } from "./bill-price.mjs";
import { fitNonNegative } from "./fit.mjs";
import { option } from "./load.mjs";
import { scrape } from "./metrics.mjs";
import { dollars, PRICES } from "./prices.mjs";
import { openedChannel } from "./publisher.mjs";
import { bundleService, startService, work } from "./service.mjs";
import { gatesForRun, wholeBill } from "./whole-bill.mjs";

const MARKETS = Number(option("markets", 100));
// A minute a phase by default: each market writes its staged minute (buckets, ids, its block) once a minute.
const SECONDS = Number(option("seconds", 60));
const FLUSH_MS = String(option("flush-ms", 10_000));
const asJson = process.argv.includes("--json");
// `--quick`: one short cycle-less venue phase and no stagger, to try the phases (the figures are then not the venue's).
const QUICK = process.argv.includes("--quick");
const WRITE_PATH_ONLY = process.argv.includes("--write-path");
/** V8's inspector on the service's runtime (e.g. for bench/heap-watch.mjs while the bench runs); none by default. */
const INSPECTOR_PORT = option("inspector-port", undefined);
// Progress on stderr either way (stdout is the JSON's): a run that stops says in which phase.
const log = (...line) => console.error(...line);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The two models of docs/capacity.md. */
/**
 * `batchesPerMessage`: the venue's publisher sends its markets' batches of each 20 ms together, 400
 * of them, in messages of at most 64 (docs/publishing.md#the-publisher-channel); the busy market's
 * publisher sends each batch alone (one every 20 ms).
 */
export const MODELS = {
  venue: {
    markets: 2000,
    batchesPerMarketSecond: 10,
    tradesPerBatch: 1,
    levelsPerBatch: 5,
    batchesPerMessage: 64,
    subscribers: 100_000,
    subscribersPerShard: 1000,
    groupSize: 64,
  },
  busyMarket: {
    markets: 1,
    batchesPerMarketSecond: 50,
    tradesPerBatch: 20,
    levelsPerBatch: 100,
    batchesPerMessage: 1,
    subscribers: 1000,
    subscribersPerShard: 1000,
    groupSize: 64,
  },
};
/** A market's log writes its book whole every this many commits (src/writes/book-log.ts). */
const SNAPSHOT_EVERY = 4_096;
/** The group journal's ring of ticks (src/writes/journal.ts). */
const JOURNAL_SLOTS = 4_096;
/** A market's seconds: a row a minute in a ring of 25 hours (src/writes/second-ring.ts). */
const SECOND_RING_SLOTS = 1_500;
/** Trades kept hot in SQLite (a day, at most a million a market) and ids (25 hours) before R2 and expiry. */
const HOT_SECONDS = 86_400;
const HOT_MOST_TRADES = 1_000_000;
const ID_SECONDS = 90_000;
/** Trades per archived R2 chunk (TRADE_ARCHIVE_CHUNK). */
const TRADES_PER_CHUNK = 10_000;
/** Daily zips per market and day (trades, aggTrades, klines 1m, 1h, 1d: Infrequent Access), each with a Standard `.CHECKSUM`. */
const DAILY_ZIPS_PER_MARKET = 5;
/** Tardis's datasets a market-day (docs/tardis.md#datasets): trades and the book's three, kept 30 days (src/history/datasets.ts). */
const DATASETS_PER_MARKET = 4;
const DATASETS_KEPT_DAYS = 30;
/** An hour's book files are kept 30 days (src/history/book-files.ts BOOK_FILES_KEPT_DAYS), then built again when asked. */
const BOOK_FILES_KEPT_DAYS = 30;
/** A day's trades and aggTrades files are kept 30 days (src/history/daily-files.ts DAILY_TRADE_FILES_KEPT_DAYS), then built again when asked. */
const DAILY_TRADE_FILES_KEPT_DAYS = 30;
/**
 * The book's segments and the trade archive's chunks move to Infrequent Access 30 days after they are
 * put (an R2 lifecycle rule, docs/operations.md): old history is read now and then, and cached.
 */
const STANDARD_DAYS = 30;
/**
 * Book history (docs/history.md#book-history): a segment to R2 every SNAPSHOT_EVERY commits or
 * 1 MB of updates (about 21 bytes a level change as JSON); two hourly zips a market-hour (one put
 * each, whatever its size: src/history/sliced-put.ts) and their two checksums.
 */
const BOOK_SEGMENT_BYTES = 1_000_000;
const BOOK_JSON_BYTES_PER_LEVEL = 21;
/** The ends of the range of isolates and locations the bill is given at (the stated 1,000 in 100 between). */
const ISOLATES_AND_LOCATIONS = { low: { isolates: 100, locations: 30 }, high: { isolates: 10_000, locations: 300 } };
/** The month the bill prices storage at (history is kept for ever: a month's bill grows with the venue's age). */
const STORAGE_MONTH = 24;
/** A segment's blocks in R2 (src/history/segment-blocks.ts): a checkpoint every 1,024 batches or 128 KB of them. */
const BLOCK_ENTRIES = 1_024;
const BLOCK_CHARS = 128 * 1024;

/** The keys of the book segments in R2 under `prefix`. */
async function segmentKeys(mf, prefix) {
  const bucket = await mf.getR2Bucket("HISTORY");
  const keys = [];
  let cursor;
  do {
    const listed = await bucket.list({ prefix, cursor });
    keys.push(...listed.objects.map((o) => o.key));
    cursor = listed.truncated ? listed.cursor : undefined;
  } while (cursor);
  return keys;
}

/** The gzipped bytes a level change of the book segments in R2 at `keys` (undefined: none written). */
async function segmentBytesPerLevel(mf, keys) {
  const bucket = await mf.getR2Bucket("HISTORY");
  let bytes = 0;
  let levels = 0;
  for (const key of keys) {
    const gzipped = Buffer.from(await (await bucket.get(key)).arrayBuffer());
    bytes += gzipped.length;
    // Its blocks, gzipped apart: gunzipped whole, a JSON line each (checkpoints are bytes, not level changes).
    for (const line of gunzipSync(gzipped).toString().split("\n")) {
      if (line.length === 0) continue;
      for (const entry of JSON.parse(line).entries) for (const [, , bids, asks] of entry.u) levels += bids.length + asks.length;
    }
  }
  return levels > 0 ? Math.round((bytes / levels) * 100) / 100 : undefined;
}

/** A repeatable stream of numbers in [0, 1) (a linear congruential generator): the same bytes each run. */
function seededRandom(seed) {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
}

/**
 * R2's bytes a trade, measured on the formats the service writes (docs/history.md): its archive
 * chunk (the wire trades as JSON, gzipped) and its two daily files (trades and aggTrades CSV,
 * deflated in a zip), over 10,000 trades of three markets' shapes whose prices walk and whose
 * quantities and sides are random — node's zlib at its default level, as the runtime's
 * CompressionStream. A synthetic feed's repeated prices would compress far better than a real one.
 */
function historyBytesPerTrade() {
  const random = seededRandom(42);
  const per = { chunk: 0, dailyFiles: 0, datasets: 0 };
  const shapes = [
    ["BTCUSDT", 9_700_000, 2, 5],
    ["ETHBTC", 10_700, 2, 3],
    ["SOLUSDT", 1_080_000, 4, 1],
  ];
  for (const [symbol, mid, priceScale, quantityScale] of shapes) {
    const n = 10_000;
    let price = mid;
    let time = Date.UTC(2026, 10, 26);
    const trades = Array.from({ length: n }, (_, i) => {
      price += Math.round((random() - 0.5) * 20);
      time += Math.floor(random() * 200);
      const quantity = 1 + Math.floor(random() * 10 ** quantityScale);
      return {
        tradeId: 1_000_000 + i,
        id: `${symbol}-${5_000_000 + i}`,
        price: (price / 10 ** priceScale).toFixed(priceScale),
        quantity: (quantity / 10 ** quantityScale).toFixed(quantityScale),
        side: random() < 0.5 ? "buy" : "sell",
        time,
      };
    });
    const maker = (t) => (t.side === "sell" ? "True" : "False");
    const quote = (t) => (Number(t.price) * Number(t.quantity)).toFixed(priceScale + quantityScale);
    const tradesCsv = trades.map((t) => `${t.tradeId},${t.price},${t.quantity},${quote(t)},${t.time},${maker(t)},True\n`).join("");
    const aggCsv = trades.map((t) => `${t.tradeId},${t.price},${t.quantity},${t.tradeId},${t.tradeId},${t.time},${maker(t)},True\n`).join("");
    per.chunk += gzipSync(JSON.stringify(trades)).length / n / shapes.length;
    per.dailyFiles += (deflateRawSync(tradesCsv).length + deflateRawSync(aggCsv).length) / n / shapes.length;
    // Tardis's trades dataset (docs/tardis.md#datasets): microsecond times, the taker's side.
    const datasetCsv = trades.map((t) => `binance,${symbol},${t.time}000,${t.time}000,${t.tradeId},${t.side},${t.price},${t.quantity}\n`).join("");
    per.datasets += gzipSync(datasetCsv).length / n / shapes.length;
  }
  return { chunk: Math.round(per.chunk * 10) / 10, dailyFiles: Math.round(per.dailyFiles * 10) / 10, datasets: Math.round(per.datasets * 10) / 10 };
}
const TRADE_R2_BYTES = historyBytesPerTrade();

/**
 * R2's bytes a level change, measured on the formats the service writes (docs/history.md#book-history)
 * over 60,000 changes of three markets' shapes in a model's batches: its segment (the commits'
 * entries as JSON, units as text, gzipped) and its two hourly files (the book's CSV rows, and the
 * bookTicker's at each change of the best levels, deflated in zips). Levels fall within 50 ticks
 * of a walking mid, a fifth of them removals, quantities random: the run's own feed cycles through
 * its levels and compresses better than a real book would (its segments are reported beside).
 */
function bookBytesPerLevel(levelsPerBatch, batchesPerSecond) {
  const random = seededRandom(7);
  const shapes = [
    [9_700_000, 2, 5],
    [10_700, 2, 3],
    [1_080_000, 4, 1],
  ];
  const per = { segment: 0, hourlyFiles: 0, datasets: 0 };
  for (const [start, priceScale, quantityScale] of shapes) {
    const changes = 60_000;
    let mid = start;
    let time = Date.UTC(2026, 10, 26, 14);
    let sequence = 5_000_000;
    const bids = new Map();
    const asks = new Map();
    const quantity = () => 1 + Math.floor(random() * 10 ** quantityScale);
    for (let i = 1; i <= 200; i++) {
      bids.set(mid - i, quantity());
      asks.set(mid + i, quantity());
    }
    const p = (units) => (units / 10 ** priceScale).toFixed(priceScale);
    const q = (units) => (units === 0 ? "0" : (units / 10 ** quantityScale).toFixed(quantityScale));
    const entries = [];
    const rows = [];
    const tops = [];
    let lastTop = "";
    // Tardis's three book datasets (docs/tardis.md#datasets): a row a level, the best 25 a side and the best bid and ask when they change.
    const l2 = [];
    const top25 = [];
    const quotes = [];
    let last25 = "";
    for (let n = 0; n < changes; ) {
      sequence += 1;
      time += Math.max(1, Math.round((1000 / batchesPerSecond) * (0.5 + random())));
      mid += Math.round((random() - 0.5) * 4);
      const update = [[], []];
      for (let l = 0; l < levelsPerBatch; l++, n++) {
        const bid = random() < 0.5;
        const price = bid ? mid - 1 - Math.floor(random() * 50) : mid + 1 + Math.floor(random() * 50);
        const units = random() < 0.2 ? 0 : quantity();
        const side = bid ? bids : asks;
        if (units === 0) side.delete(price);
        else side.set(price, units);
        update[bid ? 0 : 1].push([String(price), String(units)]);
        rows.push(`${sequence},${time},${bid ? "bid" : "ask"},${p(price)},${q(units)},delta\n`);
        l2.push(`binance,BTCUSDT,${time}000,${time}000,false,${bid ? "bid" : "ask"},${p(price)},${q(units)}\n`);
      }
      entries.push(JSON.stringify({ t: time, u: [["d", sequence, ...update]] }));
      const bestBid = Math.max(...bids.keys());
      const bestAsk = Math.min(...asks.keys());
      const top = `${p(bestBid)},${q(bids.get(bestBid))},${p(bestAsk)},${q(asks.get(bestAsk))}`;
      if (top !== lastTop) tops.push(`${sequence},${time},${top}\n`);
      if (top !== lastTop) quotes.push(`binance,BTCUSDT,${time}000,${time}000,${q(asks.get(bestAsk))},${p(bestAsk)},${p(bestBid)},${q(bids.get(bestBid))}\n`);
      lastTop = top;
      const bestBids = [...bids.keys()].sort((a, b) => b - a).slice(0, 25);
      const bestAsks = [...asks.keys()].sort((a, b) => a - b).slice(0, 25);
      const levels25 = bestAsks.map((a, i) => `${p(a)},${q(asks.get(a))},${p(bestBids[i])},${q(bids.get(bestBids[i]))}`).join(",");
      if (levels25 !== last25) top25.push(`binance,BTCUSDT,${time}000,${time}000,${levels25}\n`);
      last25 = levels25;
    }
    // A segment in R2 is blocks (src/history/segment-blocks.ts): each the whole book (its checkpoint)
    // and at most BLOCK_ENTRIES batches or BLOCK_CHARS of them, gzipped apart — the checkpoints'
    // bytes are the price of reading any moment from one block.
    const base = JSON.stringify({ bids: [...bids].map(([u, n]) => [String(u), String(n)]), asks: [...asks].map(([u, n]) => [String(u), String(n)]) });
    let blocked = 0;
    for (let at = 0; at < entries.length; ) {
      const block = [];
      for (let chars = 0; at < entries.length && block.length < BLOCK_ENTRIES && chars < BLOCK_CHARS; at++) {
        block.push(entries[at]);
        chars += entries[at].length;
      }
      blocked += gzipSync(`{"base":${base},"entries":[${block.join(",")}]}\n`).length;
    }
    per.segment += blocked / changes / shapes.length;
    per.hourlyFiles += (deflateRawSync(rows.join("")).length + deflateRawSync(tops.join("")).length) / changes / shapes.length;
    per.datasets += (gzipSync(l2.join("")).length + gzipSync(top25.join("")).length + gzipSync(quotes.join("")).length) / changes / shapes.length;
  }
  return { segment: Math.round(per.segment * 100) / 100, hourlyFiles: Math.round(per.hourlyFiles * 100) / 100, datasets: Math.round(per.datasets * 100) / 100 };
}

/**
 * SQLite's bytes of the venue's market hosts after the run, table by table in their files under
 * `persist` (`dbstat`: the bytes each table and its indexes use in their pages, `used`, and the
 * pages' bytes, `pages` — a market's small tables take a page each, mostly empty, so a row's bytes
 * are its used bytes at the fill of the big tables' pages), with what they hold: the trades in
 * blocks, the minutes, the seconds' ring rows, the journal's ticks, the segments kept.
 */
function sqliteHeld(persist, isVenue) {
  const dir = path.join(persist, "do", "service-MarketObject");
  const held = { bytes: {}, pages: {}, blockTrades: 0, minuteRows: 0, ringRows: 0, journalRows: 0, segmentRows: 0, markets: 0, hosts: 0 };
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(path.join(dir, file));
    try {
      const tables = db.prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')").all();
      const ownTable = new Map(tables.map((t) => [t.name, t.tbl_name]));
      const venue = (table) => isVenue(table.match(/^m_([A-Z0-9]+)_/)?.[1]);
      if (!tables.some((t) => t.name === "journal")) continue;
      held.hosts += 1;
      for (const { name, used, pages } of db.prepare("SELECT name, sum(pgsize - unused) AS used, sum(pgsize) AS pages FROM dbstat GROUP BY name").all()) {
        const table = ownTable.get(name) ?? name;
        if (/^m_/.test(table) && !venue(table)) continue;
        const family = table.replace(/^m_[A-Z0-9]+_/, "").replace(/_[0-9]+$/, "");
        held.bytes[family] = (held.bytes[family] ?? 0) + used;
        held.pages[family] = (held.pages[family] ?? 0) + pages;
      }
      const count = (suffix, expression) =>
        tables
          .filter((t) => t.name === t.tbl_name && t.name.endsWith(`_${suffix}`) && venue(t.name))
          .reduce((sum, t) => sum + (db.prepare(`SELECT ${expression} AS n FROM "${t.name}"`).get().n ?? 0), 0);
      held.markets += tables.filter((t) => t.name.endsWith("_meta") && venue(t.name)).length;
      held.blockTrades += count("trade_blocks", "sum(last_seq - first_seq + 1)");
      held.minuteRows += count("minute_buckets", "count(*)");
      held.ringRows += count("second_ring", "count(*)");
      held.segmentRows += count("book_segments", "count(*)");
      held.journalRows += db.prepare("SELECT count(*) AS n FROM journal").get().n;
    } finally {
      db.close();
    }
  }
  return held;
}

/**
 * SQLite's GB for a model after `months`, from the bytes held after the run: hot trades a day (at
 * most a million a market) and their ids 25 hours, a minute's candle rows (and its hours' and
 * days') for ever, a full ring of seconds, each host's full journal, a segment's row for ever,
 * the rest (records, the book's snapshot, kv) a market as measured. `idTrades`: the ids' trades
 * (all the run's, every id is held 25 hours).
 */
function sqliteGbAt(model, held, idTrades, months) {
  // The fill of the pages of the families past 4 MB (the journal, the blocks, the ids, the ring).
  const big = Object.keys(held.pages).filter((f) => held.pages[f] > 4 * 1024 * 1024);
  const used = big.reduce((sum, f) => sum + held.bytes[f], 0);
  const pages = big.reduce((sum, f) => sum + held.pages[f], 0);
  const fill = pages > 0 ? used / pages : 1;
  const b = (family) => (held.bytes[family] ?? 0) / fill;
  const tradesPerMarketSecond = model.batchesPerMarketSecond * model.tradesPerBatch;
  const perTrade = b("trade_blocks") / Math.max(1, held.blockTrades);
  const perId = Object.keys(held.bytes)
    .filter((f) => f.startsWith("trade_ids"))
    .reduce((sum, f) => sum + b(f) / Math.max(1, idTrades), 0);
  const perMinute = (b("minute_buckets") + b("rollup_buckets")) / Math.max(1, held.minuteRows);
  const perRing = b("second_ring") / Math.max(1, held.ringRows);
  const perJournalRow = b("journal") / Math.max(1, held.journalRows);
  const perSegment = b("book_segments") / Math.max(1, held.segmentRows);
  const named = new Set(["trade_blocks", "minute_buckets", "rollup_buckets", "second_ring", "journal", "book_segments"]);
  const rest = Object.keys(held.bytes)
    .filter((f) => !named.has(f) && !f.startsWith("trade_ids"))
    .reduce((sum, f) => sum + b(f), 0);
  const hosts = Math.ceil(model.markets / model.groupSize);
  const days = (months * 365) / 12;
  const segmentsPerMarket = ((model.batchesPerMarketSecond * days * 86_400) / SNAPSHOT_EVERY) * (model.levelsPerBatch > 0 ? 1 : 0);
  const perMarket =
    perTrade * Math.min(tradesPerMarketSecond * HOT_SECONDS, HOT_MOST_TRADES) +
    perId * tradesPerMarketSecond * ID_SECONDS +
    perMinute * days * 1_440 +
    perRing * SECOND_RING_SLOTS +
    perSegment * segmentsPerMarket +
    rest / Math.max(1, held.markets);
  return (perMarket * model.markets + perJournalRow * JOURNAL_SLOTS * hosts) / 1e9;
}

/** A synthetic market: a book of 200 levels a side around its mid, level changes cycling through it, trades at the touch. */
function feed(symbol, priceScale, quantityScale, mid) {
  const price = (units) => (units / 10 ** priceScale).toFixed(priceScale);
  const quantity = (n) => (n / 10 ** quantityScale).toFixed(quantityScale);
  const midUnits = Math.round(mid * 10 ** priceScale);
  let sequence = 0;
  let n = 0;
  let tradeN = 0;
  return {
    symbol,
    snapshot() {
      sequence += 1;
      const side = (sign) => Array.from({ length: 200 }, (_, i) => [price(midUnits + sign * (1 + i)), quantity(1000 + i)]);
      return { type: "snapshot", sequence, bids: side(-1), asks: side(1) };
    },
    batch(levels, trades) {
      const body = { symbol };
      if (levels > 0) {
        sequence += 1;
        const bids = [];
        const asks = [];
        for (let i = 0; i < levels; i++) {
          n += 1;
          const offset = 1 + (n % 200);
          (n % 2 === 0 ? bids : asks).push([price(n % 2 === 0 ? midUnits - offset : midUnits + offset), quantity(1000 + (n % 997))]);
        }
        body.book = { type: "delta", sequence, bids, asks };
      }
      if (trades > 0) {
        const time = Date.now();
        body.trades = Array.from({ length: trades }, () => ({
          id: `${symbol}-${++tradeN}`,
          price: price(midUnits + 1),
          quantity: quantity(1000),
          side: "buy",
          time,
        }));
      }
      return body;
    },
  };
}

/** Per object class, what grew between two scrapes: rows written and read, requests by kind. */
function grown(before, after) {
  const byObject = {};
  /** Rows written by `object/table`. */
  const tables = {};
  for (const [series, value] of after) {
    const match = /^(mds_storage_rows_written_total|mds_storage_rows_read_total|mds_object_requests_total|mds_storage_table_rows_written_total)\{(.*)\}$/.exec(
      series,
    );
    if (!match) continue;
    const labels = Object.fromEntries([...match[2].matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (match[1] === "mds_storage_table_rows_written_total") {
      const key = `${labels.object}/${labels.table}`;
      tables[key] = (tables[key] ?? 0) + value - (before.get(series) ?? 0);
      continue;
    }
    const entry = (byObject[labels.object] ??= { rowsWritten: 0, rowsRead: 0, calls: 0, alarms: 0, messages: 0, sessionCalls: 0 });
    const delta = value - (before.get(series) ?? 0);
    if (match[1] === "mds_storage_rows_written_total") entry.rowsWritten += delta;
    else if (match[1] === "mds_storage_rows_read_total") entry.rowsRead += delta;
    else entry[{ call: "calls", alarm: "alarms", message: "messages", session: "sessionCalls" }[labels.kind]] += delta;
  }
  const total = (field) => Object.values(byObject).reduce((sum, o) => sum + o[field], 0);
  return {
    byObject,
    tables,
    rowsWritten: total("rowsWritten"),
    rowsRead: total("rowsRead"),
    // A call on an RPC session is part of the request that opened it (counted under `calls`): not billed.
    requests: total("calls") + total("alarms") + total("messages") / PRICES.messagesPerRequest,
    // The publishers' messages are priced from the model's (how many batches a message carries).
    messages: total("messages"),
    sessionCalls: total("sessionCalls"),
  };
}

/**
 * Publishes `batchesPerSecond` batches of `levels` level changes and `trades` trades to each of
 * `markets`, spread over `channels`, for `warm + seconds`; counts over the last `seconds` only.
 */
async function phase(service, channels, markets, { batchesPerSecond, levels, trades }, seconds, warm = 3) {
  const counts = { batches: 0, trades: 0, levels: 0 };
  let counting = false;
  let stop = false;
  const inFlight = new Set();
  const interval = 1000 / batchesPerSecond;
  const driver = (async () => {
    let next = performance.now();
    let turn = 0;
    // The markets' batches spread over the interval in slices of about 20 ms, as a venue's
    // publishers' arrive, not in one burst (a burst's first batch commits alone, the rest a tick later).
    const slices = Math.max(1, Math.min(markets.length, Math.round(interval / 20)));
    const perSlice = Math.ceil(markets.length / slices);
    while (!stop) {
      for (let k = 0; k < slices; k++) {
        // A venue's publisher sends its markets' batches of a moment in one message (an array).
        const bySlice = new Map();
        for (let i = k * perSlice; i < Math.min(markets.length, (k + 1) * perSlice); i++) {
          const channel = channels[i % channels.length];
          const batch = bySlice.get(channel) ?? [];
          // The channel's window (64): a late batch is skipped, not queued.
          if (channel.unanswered + batch.length >= 60) continue;
          batch.push(markets[i].batch(levels, trades));
          bySlice.set(channel, batch);
        }
        for (const [channel, bodies] of bySlice) {
          for (const [j, answer] of channel.sendMany(bodies).entries()) {
            const body = bodies[j];
            const sent = answer.then(({ result }) => {
              if (!counting) return;
              counts.batches += 1;
              counts.trades += result.acceptedTrades;
              counts.levels += (body.book?.bids.length ?? 0) + (body.book?.asks.length ?? 0);
            });
            inFlight.add(sent);
            sent.finally(() => inFlight.delete(sent));
          }
        }
        next += interval / slices;
        await sleep(Math.max(0, next - performance.now()));
      }
      turn += 1;
    }
    return turn;
  })();
  await sleep(warm * 1000);
  // The counts of rows and requests are the isolate's, handed on by the scrape itself: the window is exact.
  const before = await scrape(service.url, TOKEN);
  const cpuBefore = service.cpuSeconds();
  counting = true;
  const started = performance.now();
  await sleep(seconds * 1000);
  const after = await scrape(service.url, TOKEN);
  const cpu = service.cpuSeconds() - cpuBefore;
  const measured = (performance.now() - started) / 1000;
  counting = false;
  stop = true;
  await driver;
  await Promise.all(inFlight);
  const hosts = new Set(markets.map((m) => m.group)).size;
  return {
    ...grown(before, after),
    billed: billedIn(grew(before, after)),
    ...counts,
    seconds: measured,
    marketSeconds: markets.length * measured,
    hostSeconds: hosts * measured,
    cpuSeconds: cpu,
  };
}

/**
 * Objects a venue has one of (or a few) whatever its size: their counts are taken per second as
 * measured, not scaled with the hosts as the market hosts' and their shards' are.
 */
const SINGLETONS = new Set(["channel", "price-index", "metrics", "registry", "guard"]);

/** A phase's counts of `field` (`rowsWritten`, `rowsRead`, `billed`) split: the scaled objects' and the singletons'. */
function split(p, field) {
  const of = (o) => (field === "billed" ? o.calls + o.alarms : o[field]);
  let scaled = 0;
  let fixed = 0;
  for (const [name, o] of Object.entries(p.byObject)) {
    if (SINGLETONS.has(name)) fixed += of(o);
    else scaled += of(o);
  }
  return { scaled, fixed };
}

/**
 * The model's line items: per second, and dollars a month — its rows and requests as counted for
 * it (`measured`: the busy phase's own, the venue's from its phase scaled), the rest from the model.
 */
function priced(model, measured, book, sqliteGb) {
  const batches = model.markets * model.batchesPerMarketSecond;
  const trades = batches * model.tradesPerBatch;
  const levels = batches * model.levelsPerBatch;
  const hosts = Math.ceil(model.markets / model.groupSize);
  const { rowsWrittenPerSecond: rowsWritten, rowsReadPerSecond: rowsRead, requestsPerSecond: requests } = measured;
  // Objects busy all the time: each group's host (its relay inside), the shards, the publishers' channel.
  const busyObjects = hosts + Math.ceil(model.subscribers / model.subscribersPerShard) + 1;
  const gbSeconds = busyObjects * PRICES.objectGb;
  // Per market: a segment closes on its count or its bytes, whichever comes first.
  const perMarketBatches = model.batchesPerMarketSecond;
  const segmentsPerMarket = Math.max(
    perMarketBatches / SNAPSHOT_EVERY,
    (perMarketBatches * model.levelsPerBatch * BOOK_JSON_BYTES_PER_LEVEL) / BOOK_SEGMENT_BYTES,
  );
  const booked = model.levelsPerBatch > 0 ? model.markets : 0;
  // The datasets' pieces: one put a step of up to 8 segments (src/history/datasets-workflow.ts CHUNK_SEGMENTS).
  const r2Puts =
    trades / TRADES_PER_CHUNK + booked * (segmentsPerMarket + 2 / 3_600 + segmentsPerMarket / 8) + (model.markets * DAILY_ZIPS_PER_MARKET) / 86_400;
  // An hour's two zips are a put each whatever their size (their checksums are Standard puts, above); a day's four datasets too.
  const r2PutsInfrequent = (booked * 2) / 3_600 + (model.markets * (DAILY_ZIPS_PER_MARKET + DATASETS_PER_MARKET)) / 86_400;
  // What is kept after `months` (R2 grows by what a month adds, for ever).
  const kept = (months) => {
    const seconds = (months * 365 * 86_400) / 12;
    const days = (n) => Math.min(seconds, n * 86_400);
    // The history itself (chunks, segments), kept for ever: Standard its first 30 days, then Infrequent Access.
    const history = trades * TRADE_R2_BYTES.chunk + levels * book.segment;
    // The hourly book files, the daily trades files and Tardis's datasets are kept 30 days; an older
    // hour (or day) asked for is built again and kept 30 days more (at the venue's average).
    const hoursAgain = (VENUE_LOAD.bookHoursAgainPerSecond * levels * book.hourlyFiles * 3_600) / model.markets;
    // The daily trades and aggTrades files the same, a market-day at a time (the klines files are kept for ever, and small).
    const daysAgain = (VENUE_LOAD.tradeDaysAgainPerSecond * trades * TRADE_R2_BYTES.dailyFiles * 86_400) / model.markets;
    return {
      r2: (history * days(STANDARD_DAYS)) / 1e9,
      r2Infrequent:
        (history * (seconds - days(STANDARD_DAYS)) +
          (trades * TRADE_R2_BYTES.dailyFiles + daysAgain) * days(DAILY_TRADE_FILES_KEPT_DAYS) +
          (levels * book.hourlyFiles + hoursAgain) * days(BOOK_FILES_KEPT_DAYS) +
          (trades * TRADE_R2_BYTES.datasets + levels * book.datasets) * days(DATASETS_KEPT_DAYS)) /
        1e9,
      sqlite: sqliteGb[months],
    };
  };
  const stored = kept(STORAGE_MONTH);
  const lineItems = [
    { name: "rows written", perSecond: rowsWritten, dollars: dollars(rowsWritten, PRICES.rowsWritten) },
    { name: "rows read", perSecond: rowsRead, dollars: dollars(rowsRead, PRICES.rowsRead) },
    { name: "object requests", perSecond: requests, dollars: dollars(requests, PRICES.requests) },
    { name: "object duration (GB-s)", perSecond: gbSeconds, dollars: dollars(gbSeconds, PRICES.durationGbSeconds) },
    { name: "KV writes (prices, 1/s)", perSecond: 1, dollars: dollars(1, PRICES.kvWrites) },
    { name: "R2 class A, Standard (chunks, segments, checksums)", perSecond: r2Puts, dollars: dollars(r2Puts, PRICES.r2ClassA) },
    { name: "R2 class A, Infrequent Access (zips, datasets)", perSecond: r2PutsInfrequent, dollars: dollars(r2PutsInfrequent, PRICES.r2ClassAInfrequent) },
    {
      name: `R2 storage, Standard (chunks, segments their first 30 days; month ${STORAGE_MONTH})`,
      perSecond: 0,
      dollars: Math.max(0, stored.r2 - PRICES.r2Storage.includedGb) * PRICES.r2Storage.perGbMonth,
    },
    {
      name: `R2 storage, Infrequent Access (zips, datasets, older chunks and segments; month ${STORAGE_MONTH})`,
      perSecond: 0,
      dollars: stored.r2Infrequent * PRICES.r2StorageInfrequent.perGbMonth,
    },
    {
      name: `SQLite storage (hot trades, ids, candles; month ${STORAGE_MONTH})`,
      perSecond: 0,
      dollars: Math.max(0, stored.sqlite - PRICES.sqliteStorage.includedGb) * PRICES.sqliteStorage.perGbMonth,
    },
    { name: "Workers Paid base", perSecond: 0, dollars: PRICES.base.dollarsPerMonth },
  ].map((item) => ({ ...item, perSecond: Math.round(item.perSecond * 10) / 10, dollars: Math.round(item.dollars) }));
  return {
    rowsWrittenPerSecond: Math.round(rowsWritten),
    requestsPerSecond: Math.round(requests),
    storageGb: Object.fromEntries(
      [12, STORAGE_MONTH].map((months) => {
        const k = kept(months);
        return [`month${months}`, { r2: Math.round(k.r2), r2Infrequent: Math.round(k.r2Infrequent), sqlite: Math.round(k.sqlite) }];
      }),
    ),
    dollarsPerMonth: lineItems.reduce((s, i) => s + i.dollars, 0),
    lineItems,
  };
}

async function main() {
  mkdirSync(work, { recursive: true });
  log("bundling the service with wrangler (deploy --dry-run)…");
  // On disk, so SQLite's bytes can be read after the run (`sqliteHeld`).
  const persist = path.join(work, "cost-state");
  rmSync(persist, { recursive: true, force: true });
  const scriptPath = bundleService(asJson);
  // A group's shards as the venue deploys them (STREAM_GROUP_SHARDS "4", VENUE_LOAD.shards): the
  // subscribers' shard lines are a shard's as measured over that many, times the venue's shards.
  const vars = { DEMO_FEED: "off", METRICS: "on", METRICS_FLUSH_MS: FLUSH_MS, ADDRESS_GATES: String(gatesForRun(MARKETS)), STREAM_GROUP_SHARDS: "4" };
  let service = await startService(scriptPath, vars, { persist, inspectorPort: INSPECTOR_PORT && Number(INSPECTOR_PORT) });
  const sockets = [];
  let stopped = false;
  try {
    let { url } = service;
    await listVenue({ url, token: TOKEN, count: MARKETS, headers: { "CF-Connecting-IP": "10.70.0.2" } });
    const key = await issuePublishKey(url, TOKEN, { label: "bench cost" });
    const channels = await Promise.all(Array.from({ length: 4 }, (_, i) => openedChannel(url, key, `10.71.0.${i + 1}`)));
    const markets = Array.from({ length: MARKETS }, (_, i) => feed(`V${i}USDT`, [2, 3, 4][i % 3], [3, 2, 1][i % 3], 100 + i));
    const busy = feed("BTCUSDT", 2, 5, 97_000);
    // Each market's group, from its place in the registry's listing order (docs/design.md#market-hosts).
    const listed = await fetch(`${url}/admin/markets`, { headers: { Authorization: `Bearer ${TOKEN}`, "CF-Connecting-IP": "10.70.0.2" } });
    const order = ((await listed.json()).markets ?? []).map((m, i) => [m.symbol, m.ordinal ?? i]);
    const groupOf = new Map(order.map(([symbol, ordinal]) => [symbol, Math.floor(ordinal / MODELS.venue.groupSize)]));
    for (const market of [...markets, busy]) market.group = groupOf.get(market.symbol) ?? -1;
    const lastGroup = markets[markets.length - 1].group;
    const oneGroup = markets.filter((m) => m.group === lastGroup);
    log(`${MARKETS} markets listed; their books and the busy market's from a snapshot…`);
    for (const [i, market] of [...markets, busy].entries()) await channels[i % channels.length].send({ symbol: market.symbol, book: market.snapshot() });
    // Subscribers: one connection per five markets (their books and trades), five on the busy market.
    const stream = (names, n) => {
      const ws = new WebSocket(`${url.replace(/^http/, "ws")}/api/ws?streams=${names.join(",")}`, {
        headers: { "CF-Connecting-IP": `10.72.${n >> 8}.${n & 255}` },
      });
      ws.on("error", () => {});
      sockets.push(ws);
      return new Promise((resolve) => ws.once("open", resolve));
    };
    const opened = [];
    for (let i = 0; i < MARKETS; i += 5)
      opened.push(
        stream(
          markets.slice(i, i + 5).flatMap((m) => [`book.${m.symbol}`, `trades.${m.symbol}`]),
          i,
        ),
      );
    for (let i = 0; i < 5; i++) opened.push(stream(["book.BTCUSDT", "trades.BTCUSDT"], 4000 + i));
    await Promise.all(opened);

    const phases = {};
    let venueSegmentBytes;
    const venueShape = { batchesPerSecond: MODELS.venue.batchesPerMarketSecond, levels: MODELS.venue.levelsPerBatch, trades: MODELS.venue.tradesPerBatch };
    // A cycle of each market's log: a snapshot every SNAPSHOT_EVERY commits, at most a commit a
    // batch at this rate. The venue's phase holds a cycle and whole minutes (each market writes its
    // minute once a minute: a window of 3.4 minutes holds 3 or 4 of those writes).
    const cycle = Math.ceil(SNAPSHOT_EVERY / venueShape.batchesPerSecond) + 1;
    const venueSeconds = QUICK ? SECONDS : Math.max(SECONDS, Math.ceil(cycle / 60) * 60);
    // The busy market first and then one group, while the others have not traded: the minutes'
    // alarms of a market that traded in the last 24 h are not theirs to pay.
    const plan = [
      ["busy", [busy], { batchesPerSecond: 50, levels: 100, trades: 20 }, SECONDS],
      ["group", oneGroup, venueShape, SECONDS],
      ["venue", markets, venueShape, venueSeconds],
      ["levels", markets, { batchesPerSecond: 4, levels: 50, trades: 0 }, SECONDS],
      ["trades", markets, { batchesPerSecond: 4, levels: 0, trades: 20 }, SECONDS],
      ["slow", markets, { batchesPerSecond: 1, levels: 5, trades: 1 }, SECONDS],
    ];
    let busySpan;
    for (const [name, which, shape, seconds] of plan) {
      if (name === "group" && !QUICK) {
        // The markets' logs staggered, so their snapshots spread over a cycle (they began together):
        // in ten steps of a tenth of a cycle, one more tenth of the markets takes the venue's batches.
        log(`staggering the markets' logs over a cycle (${cycle} s)…`);
        for (let step = 0; step < 10; step++) {
          await phase(service, channels, markets.slice(0, Math.ceil(((step + 1) * markets.length) / 10)), venueShape, cycle / 10, 0);
        }
      }
      log(
        `${name}: ${which.length} market(s) × ${shape.batchesPerSecond} batches/s of ${shape.levels} level changes and ${shape.trades} trades, ${seconds} s…`,
      );
      const before = name === "venue" ? await segmentKeys(service.mf, "book-history/V") : [];
      const began = Date.now();
      phases[name] = await phase(service, channels, which, shape, seconds);
      // The busy market's history, closed long before the whole bill's history phase reads it.
      if (name === "busy") busySpan = { from: began + 2_000, to: Date.now() - 2_000 };
      // The segments the venue's phase closed hold its batches (the stagger and the group phase have its shape too).
      if (name === "venue") {
        const old = new Set(before);
        const added = (await segmentKeys(service.mf, "book-history/V")).filter((key) => !old.has(key));
        venueSegmentBytes = await segmentBytesPerLevel(service.mf, added);
        // Its segments' puts counted as R2 holds them: its class A operations also hold an hour's
        // book files when an hour ended a minute before or within it, priced by the files phase.
        phases.venue.segmentsPut = added.length;
      }
      await sleep(2000);
    }
    const whole = WRITE_PATH_ONLY ? undefined : await wholeBill(service, { channels, markets, busy, busySpan, key, persist, scriptPath, vars, log });
    if (whole) {
      service = whole.service;
      url = service.url;
    }
    const fitted = Object.entries(phases)
      .filter(([name]) => name !== "busy")
      .map(([, p]) => p);
    // The hosts' and shards' counts are fitted; the singletons' are a venue's as measured, per second.
    const perSecondFixed = (field) => fitted.reduce((sum, p) => sum + split(p, field).fixed / p.seconds, 0) / fitted.length;
    const [perBatch, perTrade, perLevel, perMarketSecond, perHostSecond] = fitNonNegative(
      fitted.map((p) => [p.batches, p.trades, p.levels, p.marketSeconds, p.hostSeconds]),
      fitted.map((p) => split(p, "rowsWritten").scaled),
    );
    // Rows read come mostly from each watched market's once-a-second records (its windows read the stored hours).
    const [readsPerBatch, readsPerMarketSecond, readsPerHostSecond] = fitNonNegative(
      fitted.map((p) => [p.batches, p.marketSeconds, p.hostSeconds]),
      fitted.map((p) => split(p, "rowsRead").scaled),
    );
    // The publishers' messages are priced from the model; the other requests fitted.
    const [requestsPerBatch, requestsPerMarketSecond, requestsPerHostSecond] = fitNonNegative(
      fitted.map((p) => [p.batches, p.marketSeconds, p.hostSeconds]),
      fitted.map((p) => split(p, "billed").scaled),
    );
    const v = phases.venue;
    const round = (x, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
    // The venue model from its own phase, part by part as counted: the hosts' own tables (the
    // group's journal, its alarm and alarm record) and the shards per host-second, the markets'
    // tables per market-second, the singletons per second, and the rows the archive deletes later
    // (a block's row and index entry, as many as were written; a minute's seconds are written over
    // 25 hours on, in their ring, not deleted). Rows read: the market objects' per market-second
    // (their windows, their snapshots' reading of the journal), the rest per host-second. Requests:
    // the publishers' messages from the model, the rest (alarms, sessions opened) per host-second.
    const HOST_TABLES = new Set(["market/journal", "market/kv", "market/alarm"]);
    let hostRows = 0;
    let marketRows = 0;
    // A market creates its ids' table of the hour once an hour (`schema`): a window that holds an
    // hour's start holds all of that hour's, so they are counted a market-hour, not a window.
    const schemaPerMarketSecond = (v.tables["market/schema"] ?? 0) / (v.marketSeconds / v.seconds) / 3_600;
    for (const [key, rows] of Object.entries(v.tables)) {
      const object = key.slice(0, key.indexOf("/"));
      if (SINGLETONS.has(object) || key === "market/schema") continue;
      if (object === "market" && !HOST_TABLES.has(key)) marketRows += rows;
      else hostRows += rows;
    }
    const venueHosts = Math.ceil(MODELS.venue.markets / MODELS.venue.groupSize);
    const perSecondOf = (field) => split(v, field).fixed / v.seconds;
    const marketReads = v.byObject.market?.rowsRead ?? 0;
    const written = {
      perHostSecond: hostRows / v.hostSeconds,
      perMarketSecond: marketRows / v.marketSeconds + schemaPerMarketSecond,
      deferredPerMarketSecond: (v.tables["market/trade_blocks"] ?? 0) / v.marketSeconds,
    };
    const venueBatches = MODELS.venue.markets * MODELS.venue.batchesPerMarketSecond;
    const venueMeasured = {
      rowsWrittenPerSecond: round(
        written.perHostSecond * venueHosts + (written.perMarketSecond + written.deferredPerMarketSecond) * MODELS.venue.markets + perSecondOf("rowsWritten"),
        1,
      ),
      rowsReadPerSecond: round(
        (marketReads / v.marketSeconds) * MODELS.venue.markets +
          ((split(v, "rowsRead").scaled - marketReads) / v.hostSeconds) * venueHosts +
          perSecondOf("rowsRead"),
        1,
      ),
      requestsPerSecond: round(
        // The publisher's messages as the run sent them (its batches a message, measured), not as modelled.
        venueBatches / Math.max(1, v.batches / Math.max(1, v.messages)) / PRICES.messagesPerRequest +
          (split(v, "billed").scaled / v.hostSeconds) * venueHosts +
          perSecondOf("billed"),
        1,
      ),
    };
    const venueParts = {
      rowsPerHostSecond: round(written.perHostSecond, 2),
      rowsPerMarketSecond: round(written.perMarketSecond, 3),
      rowsDeferredPerMarketSecond: round(written.deferredPerMarketSecond, 3),
      rowsReadPerMarketSecond: round(marketReads / v.marketSeconds, 1),
      rowsOfSingletonsPerSecond: round(perSecondOf("rowsWritten"), 2),
      rowsByTable: Object.fromEntries(
        Object.entries(v.tables)
          .filter(([, rows]) => rows > 0)
          .sort((a, b) => b[1] - a[1])
          .map(([table, rows]) => [table, round(rows / v.seconds, 2)]),
      ),
    };
    const counted = {
      rowsPerBatch: round(perBatch),
      rowsPerTrade: round(perTrade),
      rowsPerLevelChange: round(perLevel),
      rowsPerMarketSecond: round(perMarketSecond),
      rowsPerHostSecond: round(perHostSecond),
      rowsOfSingletonsPerSecond: round(perSecondFixed("rowsWritten")),
      rowsReadPerBatch: round(readsPerBatch),
      rowsReadPerMarketSecond: round(readsPerMarketSecond),
      rowsReadPerHostSecond: round(readsPerHostSecond),
      rowsReadOfSingletonsPerSecond: round(perSecondFixed("rowsRead")),
      requestsPerBatch: round(requestsPerBatch),
      batchesPerMessage: round(v.batches / Math.max(1, v.messages), 2),
      requestsPerMarketSecond: round(requestsPerMarketSecond),
      requestsPerHostSecond: round(requestsPerHostSecond),
      requestsOfSingletonsPerSecond: round(perSecondFixed("billed")),
    };
    const b = phases.busy;
    const busyMeasured = {
      rowsWrittenPerSecond: round(b.rowsWritten / b.seconds, 1),
      rowsReadPerSecond: round(b.rowsRead / b.seconds, 1),
      batchesPerSecond: round(b.batches / b.seconds, 1),
      requestsPerSecond: round(b.requests / b.seconds, 1),
    };
    // A level change's R2 bytes in each model's batches; beside them, the segments the run wrote (its feed's).
    const bookBytes = {
      venue: bookBytesPerLevel(MODELS.venue.levelsPerBatch, MODELS.venue.batchesPerMarketSecond),
      busyMarket: bookBytesPerLevel(MODELS.busyMarket.levelsPerBatch, MODELS.busyMarket.batchesPerMarketSecond),
      runSegments: { venue: venueSegmentBytes, busyMarket: await segmentBytesPerLevel(service.mf, await segmentKeys(service.mf, "book-history/BTCUSDT/")) },
    };
    // SQLite's bytes held by the venue's markets (every id of the run's trades is held), read from
    // the objects' files once the runtime has stopped and closed them.
    for (const ws of sockets) ws.terminate();
    await service.mf.dispose();
    stopped = true;
    const held = sqliteHeld(persist, (symbol) => symbol !== undefined && /^V[0-9]+USDT$/.test(symbol));
    const idTrades = Object.entries(phases)
      .filter(([name]) => name !== "busy")
      .reduce((sum, [, p]) => sum + p.trades, 0);
    // Storage grows for ever: the bill prices it at STORAGE_MONTH, and says month 12's beside.
    const sqlite = {
      venue: { 12: sqliteGbAt(MODELS.venue, held, idTrades, 12), [STORAGE_MONTH]: sqliteGbAt(MODELS.venue, held, idTrades, STORAGE_MONTH) },
      busyMarket: {
        12: sqliteGbAt(MODELS.busyMarket, held, idTrades, 12),
        [STORAGE_MONTH]: sqliteGbAt(MODELS.busyMarket, held, idTrades, STORAGE_MONTH),
      },
    };
    const venue = { ...priced(MODELS.venue, venueMeasured, bookBytes.venue, sqlite.venue), measured: venueMeasured, parts: venueParts };
    // The busy phase ran the busy-market model at full scale (50 batches a second of 100 level changes and 20 trades).
    const busyMarket = { ...priced(MODELS.busyMarket, busyMeasured, bookBytes.busyMarket, sqlite.busyMarket), measured: busyMeasured };
    const cpu = Object.fromEntries(
      Object.entries(phases).map(([name, p]) => [
        name,
        {
          usPerBatch: round((p.cpuSeconds * 1e6) / Math.max(1, p.batches), 0),
          usPerUpdate: round((p.cpuSeconds * 1e6) / Math.max(1, p.levels + p.trades), 1),
          usPerMarketSecond: round((p.cpuSeconds * 1e6) / p.marketSeconds, 0),
        },
      ]),
    );
    const result = {
      markets: MARKETS,
      seconds: SECONDS,
      metricsFlushMs: Number(FLUSH_MS),
      prices: PRICES.readAt,
      r2BytesPerTrade: TRADE_R2_BYTES,
      r2BookBytesPerLevel: bookBytes,
      sqliteHeld: { ...held, idTrades },
      counted,
      venue,
      busyMarket,
      lineItems: venue.lineItems,
      venueAll: whole && priceVenueAll({ writePath: venue, venuePhase: phases.venue, ...whole.phases }),
      // What no run shows, as a range: the isolates and locations serving the venue (the per-isolate
      // and per-location lines), the bill beyond the floor at each end.
      venueAllRange:
        whole &&
        Object.fromEntries(
          Object.entries(ISOLATES_AND_LOCATIONS).map(([end, load]) => [
            end,
            {
              ...load,
              beyondFloorDollarsPerMonth: priceVenueAll({ writePath: venue, venuePhase: phases.venue, ...whole.phases }, load).beyondFloorDollarsPerMonth,
            },
          ]),
        ),
      cpu,
      phases: Object.fromEntries(
        Object.entries(phases).map(([name, p]) => [
          name,
          {
            batches: p.batches,
            trades: p.trades,
            levels: p.levels,
            marketSeconds: round(p.marketSeconds, 1),
            hostSeconds: round(p.hostSeconds, 1),
            rowsWritten: p.rowsWritten,
            rowsRead: p.rowsRead,
            requests: round(p.requests, 1),
            sessionCalls: p.sessionCalls,
            byObject: p.byObject,
          },
        ]),
      ),
    };
    if (asJson) {
      console.log(JSON.stringify(result));
      return;
    }
    console.log(`\nCounted on this machine (${MARKETS} markets, ${SECONDS} s a phase; prices read ${PRICES.readAt})`);
    console.log("phase    batches  trades  levels  rows written  rows/batch  requests/batch  cpu µs/update");
    for (const [name, p] of Object.entries(phases))
      console.log(
        `${name.padEnd(7)} ${String(p.batches).padStart(8)} ${String(p.trades).padStart(7)} ${String(p.levels).padStart(7)} ${String(p.rowsWritten).padStart(13)} ${(p.rowsWritten / p.batches).toFixed(2).padStart(11)} ${(p.requests / p.batches).toFixed(2).padStart(15)} ${String(cpu[name].usPerUpdate).padStart(14)}`,
      );
    console.log(`\nper unit (fitted): ${JSON.stringify(counted)}`);
    for (const [name, model] of [
      ["venue (2,000 markets, 20,000 trades/s, 100,000 level changes/s)", venue],
      ["busy market (1,000 trades/s, 5,000 level changes/s)", busyMarket],
    ]) {
      console.log(
        `\n${name}: ${model.rowsWrittenPerSecond} rows written/s, ${model.requestsPerSecond} requests/s, $${model.dollarsPerMonth.toLocaleString("en-US")} a month`,
      );
      for (const item of model.lineItems)
        console.log(`  ${item.name.padEnd(40)} ${String(item.perSecond).padStart(12)}/s  $${item.dollars.toLocaleString("en-US").padStart(10)}`);
    }
    console.log(`\nvenue measured (its own phases, scaled): ${JSON.stringify(venueMeasured)}`);
    console.log(`  parts: ${JSON.stringify(venueParts)}`);
    console.log(`  R2 bytes a trade: ${JSON.stringify(TRADE_R2_BYTES)}; a level change: ${JSON.stringify(bookBytes)}`);
    console.log(`  SQLite held by the venue's markets: ${JSON.stringify({ ...held, idTrades })}`);
    console.log(`\nbusy market measured: ${JSON.stringify(busyMeasured)}`);
    console.log(
      `  rows written a second by object: ${Object.entries(phases.busy.byObject)
        .filter(([, o]) => o.rowsWritten > 0)
        .map(([name, o]) => `${name} ${(o.rowsWritten / phases.busy.seconds).toFixed(1)}`)
        .join(", ")}`,
    );
    const all = result.venueAll;
    if (!all) return;
    for (const [end, r] of Object.entries(result.venueAllRange))
      console.log(
        `the whole bill at ${r.isolates} isolates in ${r.locations} locations (${end}): beyond the floor $${r.beyondFloorDollarsPerMonth.toLocaleString("en-US")}`,
      );
    console.log(
      `\nthe whole bill (docs/capacity.md#the-whole-bill): $${all.dollarsPerMonth.toLocaleString("en-US")} a month; the platform's per-request floor $${all.platformFloorDollarsPerMonth.toLocaleString("en-US")}, everything beyond it $${all.beyondFloorDollarsPerMonth.toLocaleString("en-US")}`,
    );
    for (const item of all.lineItems)
      console.log(
        `  ${item.floor ? "floor " : "      "}${item.measured ? "" : "(modelled) "}${item.name.padEnd(66)} ${String(item.perSecond).padStart(12)}/s  $${item.dollars.toLocaleString("en-US").padStart(10)}  ${String(item.share).padStart(5)} %`,
      );
  } finally {
    for (const ws of sockets) ws.terminate();
    if (!stopped) await service.mf.dispose();
  }
}

await main();
