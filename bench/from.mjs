// `npm run bench:from [-- --back 120] [-- --subscribers 20] [-- --json] [-- --url http://127.0.0.1:8787]`
//
// A subscription from the past into live, tried as a new user would (docs/streams.md#from-any-moment),
// against the service bundled and started as `npm start` runs it. A publisher keeps BTCUSDT busy
// over `/v1/publish` — a book of 2,000 levels, then 20 batches a second of 20 level changes and 2
// trades — for `--back` seconds and on to the end. Then:
//   subscribers — `--subscribers` connections, one every half second while the publisher goes on,
//                 each `?streams=book.BTCUSDT,trades.BTCUSDT&from=<back seconds ago>` answering each
//                 `paused` with `more`: every book message continues the one before across the
//                 `live` mark (no sequence missed or repeated), every trade id once — and every
//                 trade from `from` to the live mark (the first one GET /api/trades names at
//                 `from`, then each id up to the mark: completeness, not only uniqueness); the first
//                 subscription's book equals GET /api/orderbook?sequence= at every message;
//   client      — the client package's `stream.book(symbol, { from })`: once the publisher stops,
//                 its LocalBook equals the REST book, level for level;
//   slow        — a client that reads one message a second (and asks `more` only when it reaches
//                 a `paused`): workerd's RSS every 10 s for 40 s, and the bytes it was sent.
// What a catch-up costs: reads of the market's history (mds_stream_catch_up_reads_total), the
// market's rows read and its calls (mds_storage_rows_read_total, mds_object_requests_total) and
// workerd's CPU, against the same length of time with the publisher alone, all in the same run.
// `--url` runs it against a running `npm start` instead (its ADMIN_TOKEN from .dev.vars): the
// publisher then keeps a market of its own busy, V0USDT (listed by the bench; on a server where it
// was published before, start from fresh state), and workerd's CPU and memory are the newest
// workerd process's, the demo feed's work included (the publisher-alone phase measures it too).
// Loopback only; bounded in time; it stops everything it started. Exits 1 when a check fails.

import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { LocalBook, MarketStream } from "@market-data-edge/client";
import WebSocket from "ws";
import { adminToken, issuePublishKey } from "../scripts/publish-key.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { median, option } from "./load.mjs";
import { scrape } from "./metrics.mjs";
import { PRICES } from "./prices.mjs";
import { openChannel } from "./publisher.mjs";
import { bundleService, cpuSecondsOf, rssMiBOf, startService, work } from "./service.mjs";
import { venueFeed } from "./venue-feed.mjs";

const BACK_S = Number(option("back", 120));
const SUBSCRIBERS = Number(option("subscribers", 20));
const asJson = process.argv.includes("--json");
const AGAINST = option("url", "");
let TOKEN = "bench-admin-token";
let SYMBOL = "BTCUSDT";
const log = (...line) => {
  if (!asJson) console.log(...line);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  return ok;
};

/** The sum of a family's series that carry every one of `labels` (`object="market"`, …). */
const sumOf = (series, family, labels = []) =>
  [...series].filter(([name]) => name.startsWith(family) && labels.every((label) => name.includes(label))).reduce((n, [, v]) => n + v, 0);
/** What a phase cost: the market's rows read and calls, history reads, catch-ups, workerd CPU. */
function costs(before, after, cpu) {
  const grew = (family, labels) => sumOf(after, family, labels) - sumOf(before, family, labels);
  return {
    marketRowsRead: grew("mds_storage_rows_read_total", ['object="market"']),
    marketCalls: grew("mds_object_requests_total", ['object="market"', 'kind="call"']),
    catchUpReads: grew("mds_stream_catch_up_reads_total"),
    catchUpBytes: grew("mds_stream_catch_up_bytes_total"),
    catchUpsStarted: grew("mds_stream_catch_ups_total", ['result="started"']),
    cpuSeconds: Math.round(cpu * 100) / 100,
  };
}

/** Keeps BTCUSDT busy until `stop()`: 20 batches a second of 20 level changes and 2 trades. */
function keepPublishing(channel, market) {
  let running = true;
  let refused = 0;
  const done = (async () => {
    for (let next = Date.now(); running; next += 50) {
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      channel.send(market.batch(20, 2)).catch(() => (refused += 1));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      await sleep(500);
      return refused;
    },
  };
}

/** A raw subscription from `from`: every message kept with its arrival, each `paused` answered with `more`. */
function subscribe(url, from, ip, { slow = false } = {}) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/api/ws?streams=book.${SYMBOL},trades.${SYMBOL}&from=${from}`, {
    headers: { "CF-Connecting-IP": ip },
  });
  const messages = [];
  const queue = [];
  let bytes = 0;
  const take = (message) => {
    messages.push(message);
    if (message.type === "paused") ws.send(JSON.stringify({ op: "more", token: message.token }));
  };
  ws.on("message", (data) => {
    bytes += data.length;
    const message = JSON.parse(String(data));
    if (slow) queue.push(message);
    else take(message);
  });
  // The slow client reads one message a second.
  const reader = slow ? setInterval(() => queue.length > 0 && take(queue.shift()), 1000) : undefined;
  const opened = new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const live = (stream) => messages.some((m) => m.type === "live" && m.stream === stream);
  return {
    ws,
    from,
    messages,
    opened,
    startedAt: Date.now(),
    liveAt: undefined,
    bytes: () => bytes,
    isLive: () => live(`book.${SYMBOL}`) && live(`trades.${SYMBOL}`),
    close: () => {
      clearInterval(reader);
      ws.close();
    },
  };
}

/** What a subscription received, checked: book continuity across the live mark, each trade once. */
function checkSubscription(sub, i) {
  const book = sub.messages.filter((m) => m.stream === `book.${SYMBOL}` && m.type !== "live").map((m) => m.data);
  const mark = sub.messages.find((m) => m.type === "live" && m.stream === `book.${SYMBOL}`);
  check(book[0]?.type === "snapshot", `subscription ${i}: the first book message is a snapshot`);
  let gaps = 0;
  for (let k = 1; k < book.length; k++) if (book[k].firstSequence !== book[k - 1].sequence + 1) gaps += 1;
  check(gaps === 0, `subscription ${i}: ${gaps} book messages do not continue the one before`);
  const beforeMark = sub.messages.slice(0, sub.messages.indexOf(mark)).filter((m) => m.stream === `book.${SYMBOL}`);
  check(mark && mark.sequence === beforeMark.at(-1)?.data.sequence, `subscription ${i}: the live mark names the last sequence before it`);
  const liveMessages = book.length - beforeMark.length;
  check(liveMessages > 0, `subscription ${i}: live book messages after the mark`);
  const ids = sub.messages.filter((m) => m.stream === `trades.${SYMBOL}` && m.type !== "live").flatMap((m) => m.data.map((t) => t.tradeId));
  let idGaps = 0;
  for (let k = 1; k < ids.length; k++) if (ids[k] !== ids[k - 1] + 1) idGaps += 1;
  check(idGaps === 0 && ids.length > 0, `subscription ${i}: ${idGaps} trade ids not the one before + 1 (of ${ids.length})`);
  return { bookMessages: book.length, catchUpMessages: beforeMark.length, liveMessages, trades: ids.length, book };
}

/**
 * Completeness, not only uniqueness: the first trade a subscription got is the market's first at or
 * after its `from` (asked of GET /api/trades), and every id from it to the live mark came, once.
 */
async function checkComplete(url, sub, i) {
  const response = await fetch(`${url}/api/trades/${SYMBOL}?startTime=${sub.from}&limit=1`, { headers: { "CF-Connecting-IP": `10.69.${i}.1` } });
  const [first] = await response.json();
  const ids = sub.messages.filter((m) => m.stream === `trades.${SYMBOL}` && m.type !== "live").flatMap((m) => m.data.map((t) => t.tradeId));
  const mark = sub.messages.find((m) => m.type === "live" && m.stream === `trades.${SYMBOL}`);
  const upToMark = mark?.tradeId == null ? [] : ids.filter((id) => id <= mark.tradeId);
  const expected = first && mark?.tradeId != null ? mark.tradeId - first.tradeId + 1 : 0;
  const once = new Set(upToMark).size === upToMark.length;
  const complete = check(
    first !== undefined && upToMark[0] === first.tradeId && upToMark.length === expected && once,
    `subscription ${i}: ${upToMark.length} of the ${expected} trades from its from (${first?.tradeId}) to its live mark (${mark?.tradeId}) came${once ? "" : ", some twice"}`,
  );
  return { complete, expected, received: upToMark.length };
}

/** Every message's book against the book history at its sequence (from many addresses: 10 reads a second each). */
async function againstHistory(url, messages) {
  const book = new LocalBook();
  let mismatches = 0;
  for (const [k, message] of messages.entries()) {
    book.apply(message);
    const ip = `10.66.${Math.floor(k / 250) % 250}.${1 + (k % 250)}`;
    const response = await fetch(`${url}/api/orderbook/${SYMBOL}?sequence=${message.sequence}&depth=1`, { headers: { "CF-Connecting-IP": ip } });
    const answer = await response.json();
    if (answer.checksum !== book.checksum()) mismatches += 1;
  }
  return mismatches;
}

/** The service: bundled and started here as `npm start` runs it, or a running `npm start` (`--url`). */
async function target() {
  if (AGAINST) {
    TOKEN = adminToken();
    await listVenue({ url: AGAINST, token: TOKEN, count: 1 });
    SYMBOL = "V0USDT";
    const pid = Number(execFileSync("pgrep", ["-n", "workerd"], { encoding: "utf8" }).trim());
    return { url: AGAINST, cpuSeconds: () => cpuSecondsOf(pid), rssMiB: () => rssMiBOf(pid), stop: async () => {} };
  }
  mkdirSync(work, { recursive: true });
  log("bundling the service with wrangler (deploy --dry-run)…");
  const service = await startService(bundleService(asJson), { DEMO_FEED: "off" });
  return { url: service.url, cpuSeconds: service.cpuSeconds, rssMiB: service.rssMiB, stop: () => service.mf.dispose() };
}

async function main() {
  const service = await target();
  const subs = [];
  let client;
  try {
    const url = service.url;
    const key = await issuePublishKey(url, TOKEN, { label: "bench from" });
    const channel = openChannel(url, key, "10.63.0.1");
    await channel.opened;
    const market = AGAINST ? venueFeed(SYMBOL, 2, 3, 100, 1000) : venueFeed(SYMBOL, 2, 5, 97000, 1000);
    const opening = market.snapshot();
    for (let attempt = 0; ; attempt++) {
      // A market listed a moment ago reaches every isolate within a second.
      const sent = await channel.send(opening).then(
        () => true,
        (error) => error,
      );
      if (sent === true) break;
      if (attempt > 40) throw sent;
      await sleep(250);
    }
    const publisher = keepPublishing(channel, market);
    log(`publishing ${BACK_S} s of ${SYMBOL}: a book of 2,000 levels, 20 batches a second of 20 level changes and 2 trades…`);
    await sleep((BACK_S - 20) * 1000);
    // The publisher alone for 20 s: the baseline of its costs (as long as the subscribers' phase at
    // least) and of workerd's memory growth, for the slow client's 40 s.
    const quietFrom = await scrape(url, TOKEN);
    let cpu = service.cpuSeconds();
    const quietRss = [service.rssMiB()];
    for (let s = 0; s < 2; s++) {
      await sleep(10_000);
      quietRss.push(service.rssMiB());
    }
    const quiet = costs(quietFrom, await scrape(url, TOKEN), service.cpuSeconds() - cpu);

    log(`${SUBSCRIBERS} subscriptions from ${BACK_S} s back, one every half second…`);
    const before = await scrape(url, TOKEN);
    cpu = service.cpuSeconds();
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const sub = subscribe(url, Date.now() - BACK_S * 1000, `10.64.${i}.1`);
      subs.push(sub);
      await sub.opened;
      await sleep(500);
    }
    for (const deadline = Date.now() + 120_000; Date.now() < deadline && !subs.every((s) => s.isLive()); ) await sleep(100);
    for (const sub of subs) sub.liveAt = sub.isLive() ? Date.now() : undefined;
    check(
      subs.every((s) => s.isLive()),
      `${subs.filter((s) => s.isLive()).length} of ${SUBSCRIBERS} subscriptions live`,
    );
    await sleep(3_000);
    const phaseCpu = service.cpuSeconds() - cpu;
    await sleep(11_000); // the counters reach the metrics at most 10 s behind
    const phase = costs(before, await scrape(url, TOKEN), phaseCpu);
    const checked = subs.map((sub, i) => checkSubscription(sub, i));
    const completeness = [];
    for (const [i, sub] of subs.entries()) completeness.push(await checkComplete(url, sub, i));

    log("a slow client (one message a second) for 40 s…");
    const rss = [service.rssMiB()];
    const slow = subscribe(url, Date.now() - BACK_S * 1000, "10.67.0.1", { slow: true });
    await slow.opened;
    for (let s = 0; s < 4; s++) {
      await sleep(10_000);
      rss.push(service.rssMiB());
    }
    const slowBytes = slow.bytes();
    slow.close();
    log("the client package: stream.book(symbol, { from })…");
    client = new MarketStream({ baseUrl: url, WebSocket, heartbeatTimeoutMs: 0 });
    let clientLive = false;
    const { book } = client.book(SYMBOL, { from: Date.now() - BACK_S * 1000, onLive: () => (clientLive = true) });

    for (const deadline = Date.now() + 60_000; Date.now() < deadline && !clientLive; ) await sleep(100);
    check(clientLive, "the client package's book went live");

    const refused = await publisher.stop();
    check(refused === 0, `${refused} batches refused`);
    const answer = await fetch(`${url}/api/orderbook/${SYMBOL}?depth=1000`, { headers: { "CF-Connecting-IP": "10.68.0.1" } });
    const rest = await answer.json();
    check(answer.status === 200, `GET /api/orderbook: ${answer.status} ${JSON.stringify(rest).slice(0, 200)}`);
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && book.sequence !== rest.sequence; ) await sleep(100);
    const equal =
      book.sequence === rest.sequence &&
      JSON.stringify(book.bids(1000)) === JSON.stringify(rest.bids) &&
      JSON.stringify(book.asks(1000)) === JSON.stringify(rest.asks);
    check(equal, `the client package's LocalBook (sequence ${book.sequence}) equals the REST book (${rest.sequence})`);

    log("the first subscription's book against the history at every message…");
    const mismatches = await againstHistory(url, checked[0].book);
    check(mismatches === 0, `${mismatches} of ${checked[0].book.length} books differ from the history's`);

    const perCatchUp = (n) => Math.round((n / Math.max(1, phase.catchUpsStarted)) * 10) / 10;
    // A million catch-ups at Cloudflare's prices: the market calls as requests, the rows they read.
    const calls = perCatchUp(phase.marketCalls - quiet.marketCalls);
    const rows = Math.max(0, perCatchUp(phase.marketRowsRead - quiet.marketRowsRead));
    const dollarsPerMillion = Math.round((calls * PRICES.requests.perMillion + rows * PRICES.rowsRead.perMillion) * 100) / 100;
    const result = {
      backSeconds: BACK_S,
      subscribers: SUBSCRIBERS,
      live: subs.filter((s) => s.isLive()).length,
      secondsToLiveMedian: Math.round(median(subs.filter((s) => s.liveAt).map((s) => (s.liveAt - s.startedAt) / 1000)) * 10) / 10,
      catchUpMessagesMedian: median(checked.map((c) => c.catchUpMessages)),
      tradesMedian: median(checked.map((c) => c.trades)),
      completeSubscriptions: completeness.filter((c) => c.complete).length,
      tradesExpectedMedian: median(completeness.map((c) => c.expected)),
      historyChecked: checked[0].book.length,
      historyMismatches: mismatches,
      clientBookEqualsRest: equal,
      perCatchUp: {
        historyReads: perCatchUp(phase.catchUpReads),
        kibSent: perCatchUp(phase.catchUpBytes / 1024),
        marketRowsRead: rows,
        marketCalls: calls,
        cpuMs: perCatchUp((phase.cpuSeconds - quiet.cpuSeconds) * 1000),
        dollarsPerMillion,
      },
      phase,
      publisherAlone: quiet,
      slowClient: {
        rssMiB: rss,
        growthMiB: Math.round((Math.max(...rss) - rss[0]) * 10) / 10,
        publisherAloneRssMiB: quietRss,
        publisherAloneGrowthPer40sMiB: Math.round((quietRss.at(-1) - quietRss[0]) * 2 * 10) / 10,
        kibSent: Math.round(slowBytes / 1024),
      },
      failures,
    };
    if (asJson) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(
        `\n${result.live}/${SUBSCRIBERS} live, median ${result.secondsToLiveMedian} s from connect; a catch-up: ${result.catchUpMessagesMedian} book messages, ${result.tradesMedian} trades`,
      );
      console.log(
        `completeness: ${result.completeSubscriptions}/${SUBSCRIBERS} got every trade from their from to their live mark, once (median ${result.tradesExpectedMedian} trades each)`,
      );
      console.log(`per catch-up: ${JSON.stringify(result.perCatchUp)}`);
      console.log(`history: ${result.historyChecked} books checked, ${mismatches} differ; client package's book equals REST: ${equal}`);
      console.log(
        `slow client: RSS ${rss.join(" → ")} MiB (growth ${result.slowClient.growthMiB} MiB; the publisher alone: ${quietRss.join(" → ")} MiB in 20 s), ${result.slowClient.kibSent} KiB sent to it in 40 s`,
      );
      console.log(failures.length === 0 ? "every check held" : `FAILED:\n  ${failures.join("\n  ")}`);
    }
  } finally {
    for (const sub of subs) sub.close();
    client?.close();
    await service.stop();
  }
  process.exit(failures.length === 0 ? 0 : 1);
}

await main();
