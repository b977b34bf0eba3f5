// `npm run bench:ingest [-- --seconds 30] [-- --rate 5000] [-- --trades 1000] [-- --json]`
//
// What one market absorbs from one publisher, as a feed handler sends it: book deltas generated
// at `--rate` a second and trades at `--trades` a second, gathered every 20 ms into one batch
// (docs/publishing.md#batches), for `--seconds`, three ways on the service of `npm run bench`
// (the deployable bundle on workerd, demo feed off):
//   post     — POST /v1/ingest, one batch in flight (a market's batches must arrive in order);
//   publish  — the publisher channel GET /v1/publish, batches pipelined (up to 4,096 unanswered);
//   venue    — 20 markets × 500 updates a second at once over one /v1/publish connection.
// It reports updates and trades acknowledged per second, ingest→ack p50/p99 per batch, and
// checks at the end that every acknowledged update is in the book's sequence and every
// acknowledged trade is in /api/trades. Loopback only; it stops everything it started.
import { mkdirSync } from "node:fs";
import { issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { option, percentile } from "./load.mjs";
import { openChannel } from "./publisher.mjs";
import { bundleService, startService, work } from "./service.mjs";
import { ingestHeaders } from "./signed-load.mjs";

const SECONDS = Number(option("seconds", 30));
const RATE = Number(option("rate", 5000));
const TRADE_RATE = Number(option("trades", 1000));
const VENUE_MARKETS = 20;
const VENUE_RATE = 500;
const TICK_MS = 20;
const asJson = process.argv.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};
let ipCounter = 0;
const nextIp = () => `10.60.${(++ipCounter >> 8) & 255}.${ipCounter & 255}`;

/** A market's synthetic feed: a book of 20 levels a side around `mid`, one level changed per update, and trades at the touch. */
function feed(symbol, { priceScale, quantityScale }, mid) {
  const unit = 10 ** priceScale;
  const price = (units) => (units / unit).toFixed(priceScale);
  const quantity = (n) => (n / 10 ** quantityScale).toFixed(quantityScale);
  const midUnits = Math.round(mid * unit);
  let sequence = 0;
  let tradeN = 0;
  let n = 0;
  return {
    symbol,
    snapshot() {
      sequence += 1;
      const bids = Array.from({ length: 20 }, (_, i) => [price(midUnits - 1 - i), quantity(1000 + i)]);
      const asks = Array.from({ length: 20 }, (_, i) => [price(midUnits + 1 + i), quantity(1000 + i)]);
      return { type: "snapshot", sequence, bids, asks };
    },
    delta() {
      sequence += 1;
      n += 1;
      const side = n % 2 === 0 ? "bids" : "asks";
      const offset = 1 + (n % 20);
      const level = [price(side === "bids" ? midUnits - offset : midUnits + offset), quantity(1000 + (n % 997))];
      return { type: "delta", sequence, bids: side === "bids" ? [level] : [], asks: side === "asks" ? [level] : [] };
    },
    trade(time) {
      tradeN += 1;
      return { id: `${symbol}-${tradeN}`, price: price(midUnits + 1), quantity: quantity(1000), side: "buy", time };
    },
    get sequence() {
      return sequence;
    },
  };
}

/** A batch carries at most this many book updates and this many trades (docs/publishing.md#batches). */
const BATCH_LIMIT = 1000;

/** Gathers a feed's updates and trades due since the last tick, as one batch body (what is over a batch's limit waits for the next). */
function gather(market, due) {
  const now = Date.now();
  const book = [];
  while (due.updates >= 1 && book.length < BATCH_LIMIT) {
    book.push(market.delta());
    due.updates -= 1;
  }
  const trades = [];
  while (due.trades >= 1 && trades.length < BATCH_LIMIT) {
    trades.push(market.trade(now));
    due.trades -= 1;
  }
  return { symbol: market.symbol, ...(book.length ? { book } : {}), ...(trades.length ? { trades } : {}) };
}

async function postRun(url, key, market, seconds) {
  const latencies = [];
  let updates = 0;
  let trades = 0;
  const send = async (body) => {
    const text = JSON.stringify(body);
    const started = performance.now();
    const response = await fetch(`${url}/v1/ingest`, {
      method: "POST",
      headers: ingestHeaders(key, text, "10.61.0.1"),
      body: text,
    });
    const answer = await response.json();
    if (response.status !== 200) throw new Error(`POST /v1/ingest ${response.status}: ${JSON.stringify(answer).slice(0, 300)}`);
    latencies.push(performance.now() - started);
    return answer;
  };
  await send({ symbol: market.symbol, book: market.snapshot() });
  const due = { updates: 0, trades: 0 };
  const end = Date.now() + seconds * 1000;
  let last = Date.now();
  while (Date.now() < end) {
    const now = Date.now();
    due.updates += ((now - last) * RATE) / 1000;
    due.trades += ((now - last) * TRADE_RATE) / 1000;
    last = now;
    const body = gather(market, due);
    if (!body.book && !body.trades) {
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
      continue;
    }
    await send(body);
    updates += body.book?.length ?? 0;
    trades += body.trades?.length ?? 0;
    const wait = TICK_MS - (Date.now() - now);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  return { updates, trades, latencies };
}

async function publishRun(channel, markets, rate, tradeRate, seconds) {
  const latencies = [];
  const totals = { updates: 0, trades: 0 };
  await Promise.all(markets.map((m) => channel.send({ symbol: m.symbol, book: m.snapshot() })));
  const dues = markets.map(() => ({ updates: 0, trades: 0 }));
  const inFlight = new Set();
  const end = Date.now() + seconds * 1000;
  let last = Date.now();
  while (Date.now() < end) {
    const now = Date.now();
    for (const [i, market] of markets.entries()) {
      dues[i].updates += ((now - last) * rate) / 1000;
      dues[i].trades += ((now - last) * tradeRate) / 1000;
      // Pipelined, under the channel's 4,096 unanswered: what is not sent now goes in the next batch.
      if (channel.unanswered >= 60) continue;
      const body = gather(market, dues[i]);
      if (!body.book && !body.trades) continue;
      const sent = channel.send(body).then(({ ms }) => {
        latencies.push(ms);
        totals.updates += body.book?.length ?? 0;
        totals.trades += body.trades?.length ?? 0;
      });
      inFlight.add(sent);
      sent.finally(() => inFlight.delete(sent));
    }
    last = now;
    const wait = TICK_MS - (Date.now() - now);
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, wait)));
  }
  await Promise.all(inFlight);
  return { ...totals, latencies };
}

/** Every acknowledged update is in the book's sequence and every acknowledged trade in /api/trades. */
async function verify(url, market, expectedTrades) {
  const book = await (await fetch(`${url}/api/orderbook/${market.symbol}?depth=1`, { headers: { "CF-Connecting-IP": nextIp() } })).json();
  let stored = 0;
  let fromId = 1;
  for (;;) {
    const page = await (await fetch(`${url}/api/trades/${market.symbol}?fromId=${fromId}&limit=1000`, { headers: { "CF-Connecting-IP": nextIp() } })).json();
    stored += page.filter((t) => t.id.startsWith(`${market.symbol}-`)).length;
    if (page.length < 1000) break;
    fromId = page[page.length - 1].tradeId + 1;
  }
  return {
    sequenceOk: book.sequence === market.sequence,
    bookSequence: book.sequence,
    sentSequence: market.sequence,
    tradesOk: stored === expectedTrades,
    stored,
    expectedTrades,
  };
}

function summary(name, run, seconds, markets = 1, cpuSeconds = undefined) {
  return {
    cpuUsPerBatch: cpuSeconds === undefined ? null : Math.round((cpuSeconds * 1e6) / Math.max(1, run.latencies.length)),
    cpuUsPerUpdate: cpuSeconds === undefined ? null : Number(((cpuSeconds * 1e6) / Math.max(1, run.updates)).toFixed(1)),
    name,
    markets,
    updatesPerSecond: Math.round(run.updates / seconds),
    tradesPerSecond: Math.round(run.trades / seconds),
    batches: run.latencies.length,
    ackP50Ms: percentile(run.latencies, 50),
    ackP99Ms: percentile(run.latencies, 99),
  };
}

async function main() {
  mkdirSync(work, { recursive: true });
  log("bundling the service with wrangler (deploy --dry-run)…");
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off" });
  try {
    const url = service.url;
    // Publishing keys are the operator's (docs/operations.md#publish-keys).
    const key = await issuePublishKey(url, "bench-admin-token", { label: "bench ingest" });
    await listVenue({ url, token: "bench-admin-token", count: VENUE_MARKETS, headers: { "CF-Connecting-IP": nextIp() } });
    const scales = (symbol) =>
      ({ BTCUSDT: { priceScale: 2, quantityScale: 5 }, ETHUSDT: { priceScale: 2, quantityScale: 4 } })[symbol] ?? { priceScale: 2, quantityScale: 3 };
    const results = [];
    const checks = [];

    log(`post: one market, ${RATE} updates/s and ${TRADE_RATE} trades/s over POST /v1/ingest for ${SECONDS} s…`);
    const postMarket = feed("BTCUSDT", scales("BTCUSDT"), 97000);
    let cpu = service.cpuSeconds();
    const post = await postRun(url, key, postMarket, SECONDS);
    results.push(summary("post", post, SECONDS, 1, service.cpuSeconds() - cpu));
    checks.push({ name: "post", ...(await verify(url, postMarket, post.trades)) });

    log(`publish: one market, ${RATE} updates/s and ${TRADE_RATE} trades/s over /v1/publish for ${SECONDS} s…`);
    const channel = openChannel(url, key, "10.61.0.2");
    await channel.opened;
    const wsMarket = feed("ETHUSDT", scales("ETHUSDT"), 3400);
    cpu = service.cpuSeconds();
    const ws = await publishRun(channel, [wsMarket], RATE, TRADE_RATE, SECONDS);
    results.push(summary("publish", ws, SECONDS, 1, service.cpuSeconds() - cpu));
    checks.push({ name: "publish", ...(await verify(url, wsMarket, ws.trades)) });

    log(`venue: ${VENUE_MARKETS} markets × ${VENUE_RATE} updates/s over one /v1/publish connection for ${SECONDS} s…`);
    const venueMarkets = Array.from({ length: VENUE_MARKETS }, (_, i) =>
      feed(`V${i}USDT`, { priceScale: [2, 3, 4][i % 3], quantityScale: [3, 2, 1][i % 3] }, 100 + i),
    );
    cpu = service.cpuSeconds();
    const venue = await publishRun(channel, venueMarkets, VENUE_RATE, VENUE_RATE / 10, SECONDS);
    results.push(summary("venue", venue, SECONDS, VENUE_MARKETS, service.cpuSeconds() - cpu));
    for (const market of venueMarkets.slice(0, 3)) checks.push({ name: `venue ${market.symbol}`, ...(await verify(url, market, Number.NaN)) });
    channel.close();

    if (asJson) console.log(JSON.stringify({ seconds: SECONDS, rate: RATE, tradeRate: TRADE_RATE, results, checks }));
    else {
      console.log(`\n${SECONDS} s each; ack = from sending a batch to its answer (ms)`);
      console.log("run       markets  updates/s  trades/s  batches  ack p50  ack p99  cpu µs/batch  cpu µs/update");
      for (const r of results)
        console.log(
          `${r.name.padEnd(9)} ${String(r.markets).padStart(7)}  ${String(r.updatesPerSecond).padStart(9)}  ${String(r.tradesPerSecond).padStart(8)}  ${String(r.batches).padStart(7)}  ${String(r.ackP50Ms).padStart(7)}  ${String(r.ackP99Ms).padStart(7)}  ${String(r.cpuUsPerBatch).padStart(12)}  ${String(r.cpuUsPerUpdate).padStart(13)}`,
        );
      for (const c of checks)
        console.log(
          `check ${c.name}: book sequence ${c.bookSequence} ${c.sequenceOk ? "=" : "≠"} last sent ${c.sentSequence}; trades stored ${c.stored}${Number.isNaN(c.expectedTrades) ? "" : ` ${c.tradesOk ? "=" : "≠"} acknowledged ${c.expectedTrades}`}`,
        );
    }
    if (checks.some((c) => !c.sequenceOk || (!Number.isNaN(c.expectedTrades) && !c.tradesOk))) process.exitCode = 1;
  } finally {
    await service.mf.dispose();
  }
}

await main();
