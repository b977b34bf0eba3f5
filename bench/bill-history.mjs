// The whole bill's history phase (bench/whole-bill.mjs): what a venue's backtests cost — books at
// random moments of a busy market's closed history, a replay of a minute of it, catch-ups from it
// into live, minutes of Tardis's feed — each in a window of its own, counted from the service's
// metrics (docs/capacity.md#the-whole-bill).
import WebSocket from "ws";
import { billedIn, counted, total } from "./bill-counts.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A window's counts as the history's lines read them. */
function countsOf(window) {
  const billed = billedIn(window.grown);
  return {
    ...billed,
    cpuSeconds: window.cpuSeconds,
    seconds: window.seconds,
    hostReads: total(window.grown, "mds_history_reads_total"),
    closedReads: Object.fromEntries(["memory", "cache", "r2"].map((source) => [source, total(window.grown, "mds_history_closed_reads_total", { source })])),
  };
}

/** A WebSocket's messages until `done(message)` says so (answering `paused` with `more`); resolves with their count and bytes. */
function readSocket(url, ip, done) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { "CF-Connecting-IP": ip } });
    const read = { messages: 0, bytes: 0, ended: false };
    ws.on("message", (data) => {
      const text = String(data);
      read.messages += 1;
      read.bytes += text.length;
      const message = JSON.parse(text);
      const pause = message.type === "paused" ? message : message.data?.type === "paused" ? message.data : undefined;
      if (pause) ws.send(JSON.stringify({ op: "more", token: pause.token }));
      if (done(message)) {
        read.ended = true;
        ws.close();
      }
    });
    ws.on("close", () => resolve(read));
    ws.on("error", () => resolve(read));
  });
}

/**
 * `symbol`'s closed history between `from` and `to` read three ways, each counted in its own
 * window closed by a pause longer than the holders' hand-over (`flushMs`): `rate` books a second at
 * random moments for `seconds` from ten addresses; one replay of its first minute (book and trades,
 * as fast as read); five catch-ups (book and trades) from random moments into live, one after another.
 */
export async function historyPhase(service, token, { symbol, from, to, rate, seconds, flushMs }) {
  const { url } = service;
  const ws = url.replace(/^http/, "ws");
  const at = () => Math.floor(from + Math.random() * (to - from));
  const settle = () => sleep(flushMs + 1_500);

  const readAt = {};
  const statuses = {};
  let reads = 0;
  const books = countsOf(
    await counted(service, token, async () => {
      const end = Date.now() + seconds * 1000;
      const pending = [];
      for (let next = Date.now(); Date.now() < end; next += 1000 / rate) {
        const wait = next - Date.now();
        if (wait > 0) await sleep(wait);
        reads += 1;
        pending.push(
          fetch(`${url}/api/orderbook/${symbol}?at=${at()}&depth=100`, { headers: { "CF-Connecting-IP": `10.88.0.${(reads % 10) + 1}` } })
            .then(async (response) => {
              await response.arrayBuffer();
              statuses[response.status] = (statuses[response.status] ?? 0) + 1;
              const where = response.headers.get("X-Book-Read") ?? "cache";
              readAt[where] = (readAt[where] ?? 0) + 1;
            })
            .catch(() => {
              statuses.error = (statuses.error ?? 0) + 1;
            }),
        );
      }
      await Promise.all(pending);
      await settle();
    }),
  );

  const replayMinutes = Math.min(1, (to - from) / 60_000);
  const replayTo = from + replayMinutes * 60_000;
  let replayed;
  const replay = countsOf(
    await counted(service, token, async () => {
      replayed = await readSocket(
        `${ws}/api/replay?streams=book.${symbol},trades.${symbol}&from=${from}&to=${replayTo}&speed=0`,
        "10.88.1.1",
        (m) => m.stream === "replay" && m.data?.type === "replayEnded",
      );
      await settle();
    }),
  );

  const caught = { count: 0, live: 0, messages: 0, bytes: 0, minutes: 0 };
  const catchUps = countsOf(
    await counted(service, token, async () => {
      for (let c = 0; c < 5; c++) {
        const since = at();
        caught.minutes += (Date.now() - since) / 60_000;
        const live = new Set();
        const read = await readSocket(`${ws}/api/ws?streams=book.${symbol},trades.${symbol}&from=${since}`, `10.88.2.${c + 1}`, (m) => {
          if (m.type === "live") live.add(m.stream);
          return live.size === 2;
        });
        caught.count += 1;
        caught.live += read.ended ? 1 : 0;
        caught.messages += read.messages;
        caught.bytes += read.bytes;
      }
      await settle();
    }),
  );

  // Tardis's feed (docs/tardis.md#data-feeds): the span's minutes as tardis-dev asks them, every
  // channel, each from an address of its own (its trades are the host's: the day is not built).
  const feed = { minutes: 0, statuses: {}, readAt: {}, bytes: 0 };
  const feedMinutes = Math.max(1, Math.min(10, Math.floor((to - from) / 60_000)));
  const filters = encodeURIComponent(
    JSON.stringify(["trade", "depth", "depthSnapshot", "bookTicker"].map((channel) => ({ channel, symbols: [symbol.toLowerCase()] }))),
  );
  const tardis = countsOf(
    await counted(service, token, async () => {
      await Promise.all(
        Array.from({ length: feedMinutes }, async (_, offset) => {
          const response = await fetch(`${url}/tardis/v1/data-feeds/binance?from=${new Date(from).toISOString()}&offset=${offset}&filters=${filters}`, {
            headers: { "CF-Connecting-IP": `10.88.3.${offset + 1}`, "Accept-Encoding": "gzip" },
          });
          // fetch decodes the gzip: these are the lines' bytes.
          feed.bytes += (await response.arrayBuffer()).byteLength;
          feed.minutes += 1;
          feed.statuses[response.status] = (feed.statuses[response.status] ?? 0) + 1;
          const where = response.headers.get("X-Tardis-Read") ?? "none";
          feed.readAt[where] = (feed.readAt[where] ?? 0) + 1;
        }),
      );
      await settle();
    }),
  );

  return {
    feed: { ...tardis, ...feed },
    books: { ...books, reads, statuses, readAt },
    replay: { ...replay, minutes: replayMinutes, ...replayed },
    catchUps: { ...catchUps, ...caught },
  };
}
