// `npm run bench:chaos [-- --kills 20] [-- --batches 400] [-- --json]`
//
// A nemesis over the real runtime (docs/benchmarks.md#the-chaos-benchmark-npm-run-benchchaos): the
// service started as `npm start` starts it, real clients for the whole run, and the runtime's
// whole process group killed (`kill -9`) at random moments `--kills` times, each time started again
// on the same state and port. The clients:
//   publishers  — V0USDT over `/v1/publish`, V1USDT over `POST /v1/ingest` (signed): `--batches`
//                 batches each (150 per kill), a delta and 4 trades, 16 in flight, a window each
//                 half second; what had no answer
//                 when the runtime died, or was refused, is sent again in order until answered;
//   subscribers — two native connections to each market's book and trades, which reconnect with
//                 `from=` a moment before the last trade they saw, so a catch-up closes the gap,
//                 and a Binance stream client of each (`@depth@100ms`, `@trade`) that reconnects;
//   readers     — one address asking `/api/time` 25 times a second: never more than 10 answered
//                 within a second (docs/limits.md); one reading the book history at acknowledged
//                 sequences while the run goes on; one account key read with five times a second
//                 and revoked half-way through the kills: nothing answered after the revocation
//                 (bench/chaos-readers.mjs).
// Then a checker reads everything back and counts: acknowledged trades lost, trades doubled,
// resends of applied batches answered with an error (STALE_SEQUENCE: the book had it), gaps a
// subscriber was not told of, books at sampled sequences (every 20th and those around each
// kill, and those read during the run) that differ from the publisher's own, answers beyond the
// limit and answers to the key after its revocation was answered. It prints those counts
// and exits 1 on any. Loopback only; bounded in time; it stops everything it started.
import WebSocket from "ws";
import { adminToken, issuePublishKey } from "../scripts/publish-key.mjs";
import { startService } from "../scripts/service.mjs";
import { listVenue } from "../scripts/venue.mjs";
import { bookDiffers, historyReader, limitReader, revokedKeyReader } from "./chaos-readers.mjs";
import { option } from "./load.mjs";
import { ingestHeaders, sign } from "./signed-load.mjs";

const KILLS = Number(option("kills", 3));
/** Enough batches, at a window each half second, to publish through every kill and restart. */
const BATCHES = Number(option("batches", 150 * (KILLS + 1)));
const asJson = process.argv.includes("--json");
const log = (...line) => {
  if (!asJson) console.log(...line);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const WINDOW = 16;
const TRADES = 4;
const MARKETS = ["V0USDT", "V1USDT"];

/** The markets' price and quantity scales (scripts/venue.mjs: V0 ticks 0.01 and steps 0.001, V1 0.001 and 0.01). */
const SCALES = { V0USDT: [2, 3], V1USDT: [3, 2] };
const T0 = Date.now();

/** The batches of a market, and the book after each (the publisher's own model of it). */
function plan(symbol) {
  const [ps, qs] = SCALES[symbol];
  const price = (cents) => (cents / 100).toFixed(ps);
  const qty = (n) => n.toFixed(qs);
  const bids = new Map();
  const asks = new Map();
  const batches = [];
  const books = [];
  for (let b = 0; b < BATCHES; b++) {
    const sequence = b + 1;
    const bidLevels = b === 0 ? [[price(9_990), qty(1)]] : [[price(9_900 + (b % 90)), b % 5 === 0 ? "0" : qty(1 + (b % 7))]];
    const askLevels = b === 0 ? [[price(10_010), qty(1)]] : [[price(10_010 + (b % 90)), b % 6 === 0 ? "0" : qty(1 + (b % 9))]];
    for (const [p, q] of bidLevels) q === "0" ? bids.delete(p) : bids.set(p, q);
    for (const [p, q] of askLevels) q === "0" ? asks.delete(p) : asks.set(p, q);
    const trades = Array.from({ length: TRADES }, (_, t) => ({
      id: `chaos-${symbol}-${b}-${t}`,
      price: price(10_000),
      quantity: qty(0.01),
      side: "buy",
      time: T0 + b,
    }));
    batches.push({ symbol, book: { type: b === 0 ? "snapshot" : "delta", sequence, bids: bidLevels, asks: askLevels }, trades });
    const sorted = (side, down) => [...side].sort(([a], [c]) => (down ? Number(c) - Number(a) : Number(a) - Number(c)));
    books.push({ sequence, bids: sorted(bids, true), asks: sorted(asks, false) });
  }
  return { batches, books };
}

/** A publisher channel whose unanswered batches are refused (`closed`) when the connection ends. */
function channel(url, key, ip) {
  const timestamp = String(Date.now());
  const signature = sign(key.secret, timestamp, "GET", "/v1/publish");
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/publish?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`, {
    headers: { "CF-Connecting-IP": ip },
  });
  const pending = new Map();
  let id = 0;
  const closeAll = () => {
    for (const resolve of pending.values()) resolve({ closed: true });
    pending.clear();
  };
  ws.on("message", (data) => {
    const answer = JSON.parse(String(data));
    pending.get(answer.id)?.(answer);
    pending.delete(answer.id);
  });
  ws.on("close", closeAll);
  ws.on("error", closeAll); // every error, not only the first: a refused reconnect is one more
  // A runtime that died mid-upgrade or mid-answer may leave the socket silent: given up after 15 s.
  const giveUp = () => {
    ws.terminate();
    closeAll();
  };
  return {
    opened: new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        giveUp();
        reject(new Error("no upgrade within 15 s"));
      }, 15_000);
      ws.once("open", () => {
        clearTimeout(timer);
        resolve();
      }).once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    }),
    send: (body) =>
      new Promise((resolve) => {
        const n = ++id;
        const timer = setTimeout(giveUp, 15_000);
        pending.set(n, (answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        try {
          ws.send(JSON.stringify({ id: n, ...body }));
        } catch {
          pending.get(n)?.({ closed: true });
          pending.delete(n);
        }
      }),
    close: () => ws.close(),
  };
}

/** POST /v1/ingest, signed with the publishing key: the answer's body, or `closed` when nothing answered. */
async function ingestOver(url, key, body) {
  const text = JSON.stringify(body);
  try {
    const response = await fetch(`${url}/v1/ingest`, {
      method: "POST",
      headers: ingestHeaders(key, text, "10.90.1.1"),
      body: text,
      signal: AbortSignal.timeout(10_000),
    });
    const answer = await response.json().catch(() => ({}));
    return response.status === 200 ? { result: answer } : { error: answer };
  } catch {
    return { closed: true };
  }
}

/** Publishes a market's batches in order until every one is answered, across the kills. */
function publisher(url, key, symbol, batches, counts, over) {
  const acked = new Array(batches.length).fill(false);
  const sent = new Array(batches.length).fill(0);
  let done = false;
  const run = (async () => {
    let next = 0;
    let link;
    while (next < batches.length) {
      if (over === "channel" && !link) {
        link = channel(url, key, `10.90.0.${MARKETS.indexOf(symbol) + 1}`);
        try {
          await link.opened;
        } catch {
          link = undefined;
          await sleep(500);
          continue;
        }
      }
      const windowAt = Date.now();
      const slice = batches.slice(next, next + WINDOW);
      const answers = await Promise.all(
        slice.map((batch, k) => {
          sent[next + k] += 1;
          return over === "channel" ? link.send(batch) : ingestOver(url, key, batch);
        }),
      );
      let advanced = 0;
      for (const [k, answer] of answers.entries()) {
        const i = next + k;
        if (answer.result) {
          acked[i] = true;
          advanced = k + 1;
          continue;
        }
        if (answer.closed) {
          link = undefined;
          break;
        }
        const code = answer.error?.code;
        if (code === "STALE_SEQUENCE") counts.resendErrors.push(`${symbol} batch ${i} (sent ${sent[i]} times): STALE_SEQUENCE`);
        break;
      }
      next += advanced;
      // A window each half second at most: the run spans the kills.
      await sleep(Math.max(advanced < slice.length ? 200 : 0, 500 - (Date.now() - windowAt)));
    }
    link?.close();
    done = true;
  })();
  return { run, acked, isDone: () => done, progress: () => acked.filter(Boolean).length };
}

/** A subscriber of a market that reconnects with `from=`; counts the gaps it was not told of. */
function subscriber(url, symbol, ip, counts) {
  let lastTrade; // { id, time }, over every connection
  return reconnecting(() => {
    const from = lastTrade ? `&from=${lastTrade.time - 2_000}` : "";
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/api/ws?streams=book.${symbol},trades.${symbol}${from}`, { headers: { "CF-Connecting-IP": ip } });
    let sequence; // this connection's book
    ws.on("message", (data) => {
      const message = JSON.parse(String(data));
      if (message.type === "paused") ws.send(JSON.stringify({ op: "more", token: message.token }));
      // A catch-up that could not go on says so: what follows is live, the gap told.
      if (message.error?.code === "CATCH_UP_FAILED") {
        counts.toldGaps += 1;
        lastTrade = undefined;
      }
      if (message.stream === `book.${symbol}` && message.data) {
        const d = message.data;
        if (d.type === "snapshot") sequence = d.sequence;
        else if (sequence !== undefined) {
          if (d.firstSequence !== sequence + 1) counts.untoldGaps.push(`${ip} ${symbol}: book ${d.firstSequence} after ${sequence}`);
          sequence = d.sequence;
        }
      }
      if (message.stream === `trades.${symbol}` && Array.isArray(message.data)) {
        for (const t of message.data) {
          if (lastTrade && t.tradeId > lastTrade.id + 1) counts.untoldGaps.push(`${ip} ${symbol}: trade ${t.tradeId} after ${lastTrade.id}`);
          if (!lastTrade || t.tradeId > lastTrade.id) lastTrade = { id: t.tradeId, time: t.time };
        }
      }
    });
    return ws;
  });
}

/** A client that opens its connection again 300 ms after each close, until `stop()`: `open()` makes one. */
function reconnecting(open) {
  let ws;
  let stopped = false;
  const connect = () => {
    ws = open();
    ws.on("close", () => {
      if (!stopped) setTimeout(connect, 300);
    });
    ws.on("error", () => {});
  };
  connect();
  return {
    stop: () => {
      stopped = true;
      ws.close();
    },
  };
}

/**
 * A Binance stream client of a market (`/binance/ws/<symbol>@depth@100ms/<symbol>@trade`) that
 * reconnects: on each connection every diff's `U` continues the last `u` + 1, and every trade id
 * the last + 1 (a Binance client starts each connection from a fresh snapshot, as its docs say).
 */
function binanceSubscriber(url, symbol, ip, counts) {
  const lower = symbol.toLowerCase();
  return reconnecting(() => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/binance/ws/${lower}@depth@100ms/${lower}@trade`, { headers: { "CF-Connecting-IP": ip } });
    let lastU;
    let lastTrade;
    ws.on("message", (data) => {
      const event = JSON.parse(String(data));
      counts.binanceEvents += 1;
      if (event.e === "depthUpdate") {
        if (lastU !== undefined && event.U !== lastU + 1) counts.untoldGaps.push(`binance ${ip} ${symbol}: diff ${event.U} after ${lastU}`);
        lastU = event.u;
      } else if (event.e === "trade") {
        if (lastTrade !== undefined && event.t !== lastTrade + 1) counts.untoldGaps.push(`binance ${ip} ${symbol}: trade ${event.t} after ${lastTrade}`);
        lastTrade = event.t;
      }
    });
    return ws;
  });
}

async function readAll(url, path, ip) {
  const response = await fetch(`${url}${path}`, { headers: { "CF-Connecting-IP": ip } });
  return { status: response.status, body: await response.json() };
}

async function main() {
  const counts = {
    resendErrors: [],
    untoldGaps: [],
    beyondLimit: 0,
    lost: 0,
    doubled: 0,
    bookMismatches: [],
    afterRevocation: [],
    binanceEvents: 0,
    toldGaps: 0,
  };
  let service = await startService();
  const { state, port, baseUrl: url } = service;
  const started = Date.now();
  const killedAt = [];
  try {
    const token = adminToken();
    await listVenue({ url, token, count: MARKETS.length });
    const key = await issuePublishKey(url, token, { label: "chaos", markets: MARKETS });
    await sleep(1_500); // the listing reaches every isolate within a second
    const plans = Object.fromEntries(MARKETS.map((symbol) => [symbol, plan(symbol)]));
    const subs = [
      ...MARKETS.flatMap((symbol, m) => [0, 1].map((k) => subscriber(url, symbol, `10.92.${m}.${k + 1}`, counts))),
      ...MARKETS.map((symbol, m) => binanceSubscriber(url, symbol, `10.95.${m}.1`, counts)),
    ];
    const limited = limitReader(url, counts);
    const keyReader = await revokedKeyReader(url, counts);
    const publishers = MARKETS.map((symbol, m) => publisher(url, key, symbol, plans[symbol].batches, counts, m === 0 ? "channel" : "ingest"));
    const history = historyReader(url, MARKETS, plans, publishers, counts);
    log(
      `${MARKETS.length} publishers of ${BATCHES} batches, ${subs.length} subscribers, a reader at its limit, a history reader, a key to revoke; ${KILLS} kills…`,
    );
    let revoking;
    for (let k = 0; k < KILLS; k++) {
      // Half-way, the key is revoked (not awaited: the runtime may be killed before it is answered).
      if (k === Math.floor(KILLS / 2)) revoking = keyReader.revoke();
      await sleep(1_000 + Math.random() * 3_000);
      if (publishers.every((p) => p.isDone())) break;
      killedAt.push(publishers.map((p) => p.progress()));
      await service.kill();
      log(`kill ${k + 1}: ${publishers.map((p, m) => `${MARKETS[m]} ${p.progress()}/${BATCHES}`).join(", ")}`);
      service = await startService({ state, port });
    }
    await Promise.race([Promise.all(publishers.map((p) => p.run)), sleep(600_000)]);
    const finished = publishers.every((p) => p.isDone());
    await sleep(2_000);
    revoking ??= keyReader.revoke();
    await revoking;
    await sleep(2_000);
    const admitted = await limited.stop();
    const historyReads = await history.stop();
    const keyReads = await keyReader.stop();
    for (const s of subs) s.stop();

    // The checker: every market's trades, its book now and at sampled sequences.
    for (const symbol of MARKETS) {
      const ids = new Map();
      for (let fromId = 1; ; ) {
        const page = await readAll(url, `/api/trades/${symbol}?fromId=${fromId}&limit=1000`, "10.93.0.1");
        for (const t of page.body) ids.set(t.id, (ids.get(t.id) ?? 0) + 1);
        if (page.body.length < 1000) break;
        fromId = page.body.at(-1).tradeId + 1;
        await sleep(120);
      }
      const { batches, books } = plans[symbol];
      const p = publishers[MARKETS.indexOf(symbol)];
      for (const [i, batch] of batches.entries()) {
        for (const t of batch.trades) {
          if (p.acked[i] && !ids.has(t.id)) counts.lost += 1;
          if ((ids.get(t.id) ?? 0) > 1) counts.doubled += 1;
        }
      }
      const sampled = new Set([...books.keys()].filter((i) => i % 20 === 19 || i === books.length - 1));
      for (const progress of killedAt)
        for (const d of [-2, -1, 0, 1, 2]) sampled.add(Math.min(books.length - 1, Math.max(0, progress[MARKETS.indexOf(symbol)] + d)));
      let n = 0;
      for (const i of sampled) {
        const at = await readAll(url, `/api/orderbook/${symbol}?sequence=${books[i].sequence}&depth=200`, `10.94.${n % 250}.${Math.floor(n / 250) + 1}`);
        n += 1;
        const want = books[i];
        if (at.status !== 200 || bookDiffers(at.body, want))
          counts.bookMismatches.push(`${symbol} at ${want.sequence}: ${at.status} ${JSON.stringify(at.body).slice(0, 160)}`);
      }
    }
    const result = {
      kills: killedAt.length,
      batchesPerMarket: BATCHES,
      allAnswered: finished,
      seconds: Math.round((Date.now() - started) / 1000),
      acknowledgedTradesLost: counts.lost,
      tradesDoubled: counts.doubled,
      resendsOfAppliedAnsweredWithError: counts.resendErrors.length,
      untoldGaps: counts.untoldGaps.length,
      toldGaps: counts.toldGaps,
      bookMismatches: counts.bookMismatches.length,
      answersBeyondLimit: counts.beyondLimit,
      answersAfterRevocation: counts.afterRevocation.length,
      readerAdmitted: admitted,
      historyReadsDuringRun: historyReads,
      keyAnsweredBeforeRevocation: keyReads.answeredBefore,
      binanceEventsReceived: counts.binanceEvents,
      details: {
        resendErrors: counts.resendErrors.slice(0, 10),
        untoldGaps: counts.untoldGaps.slice(0, 10),
        bookMismatches: counts.bookMismatches.slice(0, 10),
        afterRevocation: counts.afterRevocation.slice(0, 10),
      },
    };
    const bad =
      !finished ||
      counts.binanceEvents === 0 ||
      historyReads === 0 ||
      keyReads.answeredBefore === 0 ||
      result.acknowledgedTradesLost +
        result.tradesDoubled +
        result.resendsOfAppliedAnsweredWithError +
        result.untoldGaps +
        result.bookMismatches +
        result.answersBeyondLimit +
        result.answersAfterRevocation >
        0;
    if (asJson) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(
        `\n${result.kills} kills in ${result.seconds} s; every batch answered: ${finished}\n` +
          `acknowledged trades lost ${result.acknowledgedTradesLost}, doubled ${result.tradesDoubled}, resends of applied batches answered with an error ${result.resendsOfAppliedAnsweredWithError}, ` +
          `untold gaps ${result.untoldGaps} (told ${counts.toldGaps}), book mismatches ${result.bookMismatches} (sampled), answers beyond the limit ${result.answersBeyondLimit} (of ${admitted} admitted), ` +
          `answers after the revocation ${result.answersAfterRevocation} (${keyReads.answeredBefore} before it); ` +
          `the Binance clients received ${counts.binanceEvents} events, the history reader checked ${historyReads} books during the run`,
      );
      if (bad) console.log(JSON.stringify(result.details, null, 2));
    }
    process.exitCode = bad ? 1 : 0;
  } finally {
    await service.stop();
  }
}

await main();
process.exit(process.exitCode ?? 0);
