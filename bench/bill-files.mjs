// The whole bill's files and restart phases (bench/whole-bill.mjs): a day's and an hour's files
// built by their Workflows, the trade archive moving chunks to R2, and the runtime killed and
// started on the same state — each counted from the service's metrics.
import { billedIn, counted, grew, line } from "./bill-counts.mjs";
import { scrape } from "./metrics.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * A day of trades, timed `day`, into each of `markets` (`counts[i]` trades), over `channel`, in
 * batches of 200 trades at prices that walk.
 */
async function publishDay(channel, markets, counts, day) {
  for (const [i, { symbol, price, quantity, priceScale }] of markets.entries()) {
    let p = price;
    const step = Math.max(1, Math.floor(86_000_000 / counts[i]));
    const batches = [];
    for (let first = 0; first < counts[i]; first += 200) {
      const trades = [];
      for (let t = first; t < Math.min(counts[i], first + 200); t++) {
        p = Math.max(1, p + Math.round((Math.random() - 0.5) * 4));
        const side = t % 3 ? "buy" : "sell";
        trades.push({ id: `${symbol}-day-${day}-${t}`, price: (p / 10 ** priceScale).toFixed(priceScale), quantity, side, time: day + 1_000 + t * step });
      }
      batches.push({ symbol, trades });
    }
    // A market's batches apply in the order sent: 16 in flight at a time.
    for (let k = 0; k < batches.length; k += 16) await Promise.all(channel.sendMany(batches.slice(k, k + 16)));
  }
}

/**
 * The files' phase: a day's files and datasets (the daily-files Workflow, started by POST /admin/archive, and the datasets one it hands on) of
 * markets with a short and a long day; an hour's book files (the book-files Workflow, started here
 * through its binding as a host starts it at an hour's close) of markets with few and many segments;
 * the trade archive moving a day-old market's trades to R2. Each as counted, with its per-unit fit.
 */
export async function filesPhase(service, token, channel, { dayGroups, archiveMarket, archiveTrades, hourMarkets }) {
  const { url } = service;
  const yesterday = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
  const date = new Date(yesterday).toISOString().slice(0, 10);
  // A market-day's work: a fixed part (klines, checksums, the day's end) and a part per trade, fitted over two sizes of day.
  const days = [];
  for (const { markets, trades } of dayGroups) {
    await publishDay(
      channel,
      markets,
      markets.map(() => trades),
      yesterday,
    );
    const window = await counted(service, token, async () => {
      const response = await fetch(`${url}/admin/archive`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "CF-Connecting-IP": "10.70.0.3" },
        body: JSON.stringify({ date, symbols: markets.map((m) => m.symbol) }),
      });
      const answer = await response.json();
      if (response.status !== 200) throw new Error(`/admin/archive ${response.status} ${JSON.stringify(answer)}`);
      // The day's Tardis datasets (docs/tardis.md#datasets), handed on by each day's instance once its zips are written: in the window too.
      const [y, m, d] = date.split("-");
      for (const { symbol } of markets) {
        for (let attempt = 0; ; attempt++) {
          const dataset = await fetch(`${url}/tardis/v1/datasets/binance/quotes/${y}/${m}/${d}/${symbol}.csv.gz`, {
            headers: { "CF-Connecting-IP": "10.70.0.4" },
          });
          await dataset.arrayBuffer();
          if (dataset.status === 200) break;
          if (attempt > 240) throw new Error(`${symbol}'s datasets of ${date} were not built in 2 minutes`);
          await sleep(500);
        }
      }
      return answer;
    });
    for (const market of window.result.markets) {
      if (market.pending || market.failed || market.trades !== trades) throw new Error(`${market.symbol}'s day: ${JSON.stringify(market)}`);
    }
    const billed = billedIn(window.grown);
    days.push({
      markets: markets.length,
      tradesPerMarket: trades,
      cpuSeconds: window.cpuSeconds,
      ...billed,
      files: window.result.markets.map((m) => ({
        symbol: m.symbol,
        trades: m.trades,
        files: m.files.length,
        bytes: m.files.reduce((s, f) => s + f.bytes, 0),
        host: m.host,
      })),
    });
  }
  const dayFit = (field) => line(days.map((d) => [d.tradesPerMarket, field(d) / d.markets]));
  const callsOf = (w) => Object.values(w.calls).reduce((s, n) => s + n, 0);

  // The archive: trades of a day that ended at least 48 h ago (past the hot 25 h whatever the time of
  // day: a day two days old ends only 24 h before a run just after midnight UTC, and its last chunk
  // was not old enough), beyond a chunk, moved by the host's alarm (a few chunks a run).
  const archiveDay = yesterday - 2 * 86_400_000;
  const archive = await counted(service, token, async () => {
    await publishDay(channel, [archiveMarket], [archiveTrades], archiveDay);
    const bucket = await service.mf.getR2Bucket("HISTORY");
    const chunks = Math.floor((archiveTrades - 1000) / 10_000);
    // The host archives on a commit at most once a minute: a trade a second keeps it committing,
    // timed in the same old day (a block's newest trade says whether its chunk is old enough).
    for (let waited = 0; waited < 150; waited++) {
      const listed = await bucket.list({ prefix: `archive/trades/${archiveMarket.symbol}/` });
      if (listed.objects.length >= chunks) return listed.objects.length;
      const { symbol, price, quantity, priceScale } = archiveMarket;
      await channel.send({
        symbol,
        trades: [
          {
            id: `${symbol}-tick-${waited}`,
            price: (price / 10 ** priceScale).toFixed(priceScale),
            quantity,
            side: "buy",
            time: archiveDay + 86_300_000 + waited,
          },
        ],
      });
      await sleep(1000);
    }
    throw new Error(`${archiveMarket.symbol}: the archive moved no chunk in 150 s`);
  });

  // An hour's book files: the segments each market wrote in the run, handed to the Workflow as its host hands an hour.
  const bindings = await service.mf.getBindings();
  const bucket = await service.mf.getR2Bucket("HISTORY");
  const hours = [];
  for (const market of hourMarkets) {
    const listed = await bucket.list({ prefix: `book-history/${market.symbol}/` });
    const segments = listed.objects.map((o) => Number(o.key.split("/").pop().replace(/\..*$/, ""))).sort((a, b) => a - b);
    if (segments.length === 0) continue;
    const hour = hourHolding(listed.objects);
    const id = `bench-book-${market.symbol}-${Date.now().toString(36)}`;
    const window = await counted(service, token, async () => {
      const instance = await bindings.BOOK_FILES.create({
        id,
        params: { symbol: market.symbol, hour, priceScale: market.priceScale, quantityScale: market.quantityScale, segments },
      });
      for (let waited = 0; waited < 600; waited++) {
        const { status, error } = await instance.status();
        if (status === "complete") return;
        if (status === "errored" || status === "terminated") throw new Error(`${id}: ${status} ${JSON.stringify(error)}`);
        await sleep(200);
      }
      throw new Error(`${id}: not complete in 120 s`);
    });
    hours.push({ symbol: market.symbol, segments: segments.length, cpuSeconds: window.cpuSeconds, ...billedIn(window.grown) });
  }
  const hourLine = (field) => line(hours.map((h) => [h.segments, field(h)]));
  // A window's R2 operations, Workflow CPU and calls, fitted per unit (a day's trades, an hour's segments).
  const fitted = (perUnit) => ({
    aStandard: perUnit((w) => w.r2.aStandard),
    aInfrequent: perUnit((w) => w.r2.aInfrequent),
    bStandard: perUnit((w) => w.r2.bStandard + w.r2.bInfrequent),
    cpuSeconds: perUnit((w) => w.cpuSeconds),
    calls: perUnit(callsOf),
  });
  return {
    days,
    dayFit: fitted(dayFit),
    archive: { trades: archiveTrades, chunks: archive.result, cpuSeconds: archive.cpuSeconds, ...billedIn(archive.grown) },
    hours,
    hourFit: fitted(hourLine),
  };
}

/**
 * The hour most of these segments were put in, which holds most of their batches (a segment goes to
 * R2 as it closes). Not the hour of the run's clock: a files phase soon after an hour began asked
 * for an hour its segments had no rows in, and the Workflow wrote no zips ($0 in two runs of four).
 */
function hourHolding(objects) {
  const puts = new Map();
  for (const o of objects) {
    const hour = Math.floor(o.uploaded.getTime() / 3_600_000) * 3_600_000;
    puts.set(hour, (puts.get(hour) ?? 0) + 1);
  }
  return [...puts].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0][0];
}

/**
 * The restart: the runtime's processes stopped (as a deploy restarts every object) and started on
 * the same state, then a batch to every market (each host's first commit loads its markets) and a
 * subscriber on each; counted from the start until `seconds` after the last acknowledgement.
 */
export async function restartPhase(service, token, restartService, { reopen, seconds }) {
  // The Metrics object stores its totals every 10 s: the count before the kill is what it stored.
  await scrape(service.url, token);
  await sleep(12_000);
  const before = await scrape(service.url, token);
  await sleep(12_000);
  await service.mf.dispose();
  const restarted = await restartService();
  const cpu = restarted.cpuSeconds();
  const started = performance.now();
  const { channels, firstBatches } = await reopen(restarted);
  await firstBatches();
  const acknowledgedIn = (performance.now() - started) / 1000;
  await sleep(seconds * 1000);
  const after = await scrape(restarted.url, token);
  const grown = grew(before, after);
  return {
    service: restarted,
    channels,
    acknowledgedIn,
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: restarted.cpuSeconds() - cpu,
    ...billedIn(grown),
  };
}
