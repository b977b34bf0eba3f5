// The whole bill priced (bench/whole-bill.mjs): the venue's stated load, and every line of its
// month from the phases' counts at Cloudflare's published prices (bench/prices.mjs).
import { dollars, PRICES, SECONDS_PER_MONTH } from "./prices.mjs";

/**
 * The venue's stated load (issue 55, docs/capacity.md#the-whole-bill). `isolates` and `locations`:
 * how many Worker isolates and Cloudflare locations serve it — the per-isolate and per-location
 * lines (the registry's refreshes, Analytics Engine's points) scale with them, not with requests.
 * `shards`: as deployed for 100,000 subscribers (STREAM_GROUP_SHARDS "4": 4 a group and the 4 of
 * the general pool, docs/streams.md#placement).
 */
export const VENUE_LOAD = {
  markets: 2000,
  hosts: 32,
  tradesPerSecond: 20_000,
  levelChangesPerSecond: 100_000,
  publicPerSecond: 10_000,
  signedPerSecond: 1_000,
  /** The signed requests' keys (20,000, each used every 20 s). */
  keys: 20_000,
  wsApiPerSecond: 1_000,
  addresses: 50_000,
  subscribers: 100_000,
  keyedSubscribers: 20_000,
  shards: 32 * 4 + 4,
  restartsPerDay: 1,
  isolates: 1_000,
  locations: 100,
  /** The keys' usage ledgers and how soon each stores what it holds (src/core/object-ids.ts USAGE_LEDGERS, src/access/key-usage-ledger.ts). */
  usageLedgers: 32,
  usageFlushAfterMs: 5_000,
  /** How often a gate hands its keys' usage to their ledgers (src/access/held-usage.ts USAGE_HAND_OVER_MS). */
  usageHandOverMs: 5_000,
  /** The address gates (src/core/object-ids.ts ADDRESS_GATES): busy at the venue, they hold sessions and never hibernate. */
  gates: 32,
  /** A market's book segments an hour at 10 batches a second: one per 4,096 commits. */
  segmentsPerMarketHour: (10 * 3_600) / 4_096,
  /**
   * Backtests (docs/capacity.md#the-whole-bill): a venue's quants step through past hours a book at
   * a time — 1 % of the public reads (100 a second) are books at moments of closed history; they
   * replay 1,000 market-minutes a day of book and trades (a strategy's test over a busy hour a
   * day, sixteen of them); and every subscriber catches up once a deploy, a minute back.
   */
  historyReadsPerSecond: 100,
  replayMinutesPerSecond: 1_000 / 86_400,
  /** Tardis's feed (docs/tardis.md): 10,000 market-minutes a day through tardis-dev — a week of one busy market a day, every channel. */
  tardisMinutesPerSecond: 10_000 / 86_400,
  catchUpMinutesPerSecond: 100_000 / 86_400,
  /**
   * Hourly book files asked for after their 30 days (docs/history.md#kept-30-days), each built again
   * from its segments: 2,400 market-hours a day — a hundred market-days of downloads, a quant's
   * month of three markets a day (most backtests read the book where it lies, not its files).
   */
  bookHoursAgainPerSecond: 2_400 / 86_400,
  /**
   * Daily trades files asked for after their 30 days (docs/history.md#trades-files-kept-30-days),
   * each day built again from the trade archive: 100 market-days a day, the same hundred.
   */
  tradeDaysAgainPerSecond: 100 / 86_400,
  /** The share of closed-history reads that fall on history older than 30 days (Infrequent Access). */
  olderClosedReadsShare: 0.5,
};

/**
 * The venue's whole month (`venueAll`): the write path's lines as the venue phase counted them and
 * every other line from its phase, scaled to VENUE_LOAD; the platform's per-request floor (each
 * request's Workers request and CPU and the one guard call its exact limit needs) apart.
 * `writePath`: the venue model's line items (cost.mjs `priced`), `venuePhase`: that phase's
 * billed counts and seconds and market-seconds.
 */
export function priceVenueAll({ writePath, venuePhase, reads, history, subscribers, files, restart, benchHosts }, load = {}) {
  const L = { ...VENUE_LOAD, ...load };
  const items = [];
  // Priced without what a month includes; each allowance is credited once, below (creditAllowances).
  const add = (name, perSecond, price, measured, from) => items.push({ name, perSecond, price, measured, from });
  const fixed = (name, amount, measured, from) => items.push({ name, perSecond: 0, dollars: amount, measured, from, price: null });

  // The platform's floor: a request's own Workers request and CPU, and one guard call.
  const readRequests = reads.sent.public + reads.sent.signed + reads.sent.ws;
  const restRate = L.publicPerSecond + L.signedPerSecond;
  const readRate = restRate + L.wsApiPerSecond;
  const upgradesPerSecond = (L.subscribers * L.restartsPerDay) / 86_400;
  const cpuMsPerRequest = (reads.cpuSeconds * 1000) / readRequests;
  // The exact limit's call: a key's guard for a signed request, an address's gate for a public one.
  const guardPerRead = ((reads.billed.calls.guard ?? 0) + (reads.billed.calls.gate ?? 0)) / readRequests;
  const floor = [
    ["Workers requests (REST, stream upgrades)", restRate + upgradesPerSecond, PRICES.workersRequests, "reads, subscribers"],
    ["Workers CPU, ms (REST and WebSocket API requests)", readRate * cpuMsPerRequest, PRICES.workersCpuMs, "reads"],
    ["guard calls, one a request (the exact limit)", (readRate + upgradesPerSecond) * Math.min(1, guardPerRead), PRICES.requests, "reads"],
  ].map(([name, perSecond, price, from]) => ({ name, perSecond, price, measured: true, from, floor: true }));

  // The write path, as its own phase counted it (cost.mjs `priced`); its R2 writes and KV as counted now.
  const byName = new Map(writePath.lineItems.map((item) => [item.name, item]));
  const carried = (name, label, price, measured, from) => add(label, byName.get(name).perSecond, price, measured, from);
  carried("rows written", "write path: rows written", PRICES.rowsWritten, true, "venue");
  carried("rows read", "write path: rows read", PRICES.rowsRead, true, "venue");
  carried("object requests", "write path: object requests (alarms, sessions, messages)", PRICES.requests, true, "venue");
  // The hosts, the shards as deployed for the load, the address gates and the channel, each active the whole month (128 MB).
  add(
    "object duration (GB-s): hosts, shards, gates, channel always active",
    (L.hosts + L.shards + L.gates + 1) * PRICES.objectGb,
    PRICES.durationGbSeconds,
    false,
    "model: the runtime counts no wall-clock presence",
  );
  // Storage is a month's amount, not a rate: carried in dollars as the write path priced it.
  const storage = (prefix) => writePath.lineItems.find((item) => item.name.startsWith(prefix));
  for (const [prefix, from] of [
    ["R2 storage, Standard", "formats of the service"],
    ["R2 storage, Infrequent Access", "formats of the service"],
    ["SQLite storage", "the run's files"],
  ]) {
    const item = storage(prefix);
    fixed(`${prefix} (${/month \d+/.exec(item.name)[0]})`, item.dollars, true, from);
  }
  fixed("Workers Paid base", PRICES.base.dollarsPerMonth, true, "plan");
  const venueSeconds = venuePhase.seconds;
  const perMarketSecond = (n) => (n / venuePhase.marketSeconds) * L.markets;
  add("KV writes (price snapshots)", venuePhase.billed.kvWrites / venueSeconds, PRICES.kvWrites, true, "venue");
  // The segments the phase put (one class A operation each), not all its class A operations: an
  // hour's book files built within the phase are the files phase's line, per market-hour.
  add("R2 class A, Standard: book segments", perMarketSecond(venuePhase.segmentsPut), PRICES.r2ClassA, true, "venue");
  // The chunks the archive put (a class A operation each), not every class A operation of its window:
  // other markets' segments put then (an hour's staggered closes) are the write path's line.
  add(
    "R2 class A, Standard: trade archive chunks",
    (files.archive.chunks / files.archive.trades) * L.tradesPerSecond,
    PRICES.r2ClassA,
    true,
    "files (archive)",
  );
  // Thirty days on, each segment and chunk moves to Infrequent Access (a lifecycle transition, a class A operation: priced as its puts).
  add(
    "R2 class A, Infrequent Access: segments and chunks moved after 30 days",
    perMarketSecond(venuePhase.segmentsPut) + (files.archive.chunks / files.archive.trades) * L.tradesPerSecond,
    PRICES.r2ClassAInfrequent,
    false,
    "model: a transition an object",
  );
  add("ids' expiry (an hour's table dropped a market-hour: 0 rows)", 0, PRICES.rowsWritten, false, "model: 25 h do not pass in a run");

  // Reads beyond the floor.
  add("guard calls beyond one a request", readRate * Math.max(0, guardPerRead - 1), PRICES.requests, true, "reads");
  add("edge-copy refreshes (market hosts)", readRate * ((reads.billed.calls.market ?? 0) / readRequests), PRICES.requests, true, "reads");
  const perIsolate = (n) => (n / reads.seconds) * L.isolates;
  const perLocation = (n) => (n / reads.seconds) * L.locations;
  add("edge-copy refreshes (price index), per location", perLocation(reads.billed.calls["price-index"] ?? 0), PRICES.requests, true, "reads");
  add("registry copies' refreshes, per isolate", perIsolate(reads.billed.calls.registry ?? 0), PRICES.requests, true, "reads");
  add("KV reads (prices), per location", perLocation(reads.billed.kvReads), PRICES.kvReads, true, "reads");
  const perRead = (n) => readRate * (n / readRequests);
  add("R2 class B, Standard (reads)", perRead(reads.billed.r2.bStandard), PRICES.r2ClassB, true, "reads");
  add("R2 class B, Infrequent Access (reads)", perRead(reads.billed.r2.bInfrequent), PRICES.r2ClassBInfrequent, true, "reads");
  // Retrieval is billed by the GB: GB a second at the GB's price (as a million units' price).
  const retrieval = { perMillion: PRICES.r2RetrievalInfrequent.perGb * 1e6 };
  add("R2 Infrequent Access retrieval (GB, reads)", perRead(reads.billed.r2.bytesInfrequent) / 1e9, retrieval, true, "reads");
  add("Analytics Engine points, per isolate", perIsolate(reads.billed.points), PRICES.analyticsPoints, true, "reads");
  add("Workers Logs events", readRate * (reads.logLines / readRequests), PRICES.workersLogs, true, "reads");
  // What signed reads cost beyond their gate's call is their keys' usage: each gate hands what it
  // counted to its keys' ledger every USAGE_HAND_OVER_MS — at the venue one ledger a gate (a key's gate
  // is named by its ledger), so at most a call a ledger each interval, as counted when fewer; each
  // ledger, busy at the venue's rate, stores what it holds every USAGE_FLUSH_AFTER_MS (its rows a flush
  // as counted, whatever the number of keys in it). Anything else the reads wrote, per read.
  const perSigned = (n) => (n / reads.sent.signed) * L.signedPerSecond;
  add(
    "keys' usage: gates' hand-overs to the ledgers (a ledger every 5 s)",
    Math.min(perSigned(reads.billed.calls["usage-ledger"] ?? 0), L.usageLedgers / (L.usageHandOverMs / 1000)),
    PRICES.requests,
    true,
    "reads",
  );
  const ledgerFlushes = reads.billed.alarmsBy["usage-ledger"] ?? 0;
  const flushesPerSecond = L.usageLedgers / (L.usageFlushAfterMs / 1000);
  const rowsPerFlush = ledgerFlushes > 0 ? (reads.billed.rowsWrittenBy["usage-ledger"] ?? 0) / ledgerFlushes : 0;
  add("keys' usage: ledgers' rows written (a flush every 5 s a ledger)", flushesPerSecond * rowsPerFlush, PRICES.rowsWritten, true, "reads");
  add("keys' usage: ledgers' alarms", Math.min(flushesPerSecond, perSigned(ledgerFlushes)), PRICES.requests, true, "reads");
  // A key's guard stores its last use once a day: the phase's keys each wrote theirs on first use
  // (counted from the warm-up on: rows a key, a day).
  add("keys' last use (a row a key-day)", (reads.guardRows / reads.keys) * (L.keys / 86_400), PRICES.rowsWritten, true, "reads");
  // A key's gate reads its record from the key's guard once a day (a deploy restarts the gates; a
  // record is held a day at most) and tells the guard its last use once a day: the warm-up's guard
  // calls a key, a key-day.
  add("keys' records read by their gates, last use told (a key-day)", (reads.warmGuardCalls / reads.keys) * (L.keys / 86_400), PRICES.requests, true, "reads");
  // The market hosts' rows while the reads run are their own background (alarms, archive, segments
  // after the write path's phases: priced in its lines), not the reads'. The rest are objects of one
  // kind whose rows come with time, not with reads (the Metrics object's store every 5 s, the price
  // index's, the channel's alarms): a second's as counted, not scaled by reads (which made 0.6 rows a
  // second 62 at the venue's rate).
  const by = reads.billed.rowsWrittenBy;
  // The shards' are their own line's (the subscribers' phase).
  const otherRows = reads.billed.rowsWritten - (by["usage-ledger"] ?? 0) - (by.guard ?? 0) - (by.market ?? 0) - (by.shard ?? 0);
  add("other objects' rows while the reads ran (metrics, price index, channel), a second", otherRows / reads.seconds, PRICES.rowsWritten, true, "reads");

  // Backtests: the history phase's windows, per book, per replay-minute, per catch-up-minute. A book at
  // a moment is one of the public reads (its request, CPU and guard call in the floor): what it costs
  // beyond one is its R2 range reads, its host calls and its CPU past the reads' mean.
  const books = history.books;
  const perBook = (n) => L.historyReadsPerSecond * (n / Math.max(1, books.reads));
  add("backtests: books at moments, R2 class B (range reads)", perBook(books.r2.bStandard), PRICES.r2ClassB, true, "history");
  add("backtests: books at moments, host calls", perBook(books.calls.market ?? 0), PRICES.requests, true, "history");
  add(
    "backtests: books at moments, Workers CPU beyond a read's, ms",
    Math.max(0, perBook(books.cpuSeconds * 1000) - L.historyReadsPerSecond * cpuMsPerRequest),
    PRICES.workersCpuMs,
    true,
    "history",
  );
  const replay = history.replay;
  const perReplayMinute = (n) => L.replayMinutesPerSecond * (n / Math.max(1e-9, replay.minutes));
  add(
    "backtests: replays, Workers requests (a replay a market-minute)",
    L.replayMinutesPerSecond,
    PRICES.workersRequests,
    false,
    "model: a replay per market-minute asked",
  );
  add("backtests: replays, R2 class B", perReplayMinute(replay.r2.bStandard), PRICES.r2ClassB, true, "history");
  add("backtests: replays, host calls (trades pages, open pages)", perReplayMinute(replay.calls.market ?? 0), PRICES.requests, true, "history");
  add("backtests: replays, Workers CPU, ms", perReplayMinute(replay.cpuSeconds * 1000), PRICES.workersCpuMs, true, "history");
  const caught = history.catchUps;
  const perCatchUpMinute = (n) => L.catchUpMinutesPerSecond * (n / Math.max(1e-9, caught.minutes));
  add("catch-ups: R2 class B", perCatchUpMinute(caught.r2.bStandard), PRICES.r2ClassB, true, "history");
  add("catch-ups: host calls (trades pages, open pages)", perCatchUpMinute(caught.calls.market ?? 0), PRICES.requests, true, "history");
  // Tardis's feed: a request a market-minute (beyond the public reads: the floor does not count it), its R2 reads, host calls and CPU.
  const feed = history.feed;
  const perFeedMinute = (n) => L.tardisMinutesPerSecond * (n / Math.max(1, feed.minutes));
  add(
    "tardis feed: Workers requests (a request a market-minute)",
    L.tardisMinutesPerSecond,
    PRICES.workersRequests,
    false,
    "model: 10,000 market-minutes a day",
  );
  add("tardis feed: guard calls (the public limit)", L.tardisMinutesPerSecond, PRICES.requests, false, "model: one a request");
  add("tardis feed: R2 class B (blocks; the cache's misses)", perFeedMinute(feed.r2.bStandard), PRICES.r2ClassB, true, "history");
  add("tardis feed: host calls (open pages, trades of days not built)", perFeedMinute(feed.calls.market ?? 0), PRICES.requests, true, "history");
  add("tardis feed: Workers CPU, ms", perFeedMinute(feed.cpuSeconds * 1000), PRICES.workersCpuMs, true, "history");
  // History older than 30 days lies in Infrequent Access: its reads pay that class's class B and a
  // block's retrieval (128 KB at most) beyond Standard's. The run reads the last hours; say half of a
  // venue's closed reads are older.
  const closedReads =
    perBook(books.r2.bStandard) + perReplayMinute(replay.r2.bStandard) + perCatchUpMinute(caught.r2.bStandard) + perFeedMinute(feed.r2.bStandard);
  const olderRead = {
    perMillion: PRICES.r2ClassBInfrequent.perMillion - PRICES.r2ClassB.perMillion + (128 * 1024 * PRICES.r2RetrievalInfrequent.perGb * 1e6) / 1e9,
  };
  add(
    "closed history older than 30 days: Infrequent Access's reads beyond Standard's",
    closedReads * L.olderClosedReadsShare,
    olderRead,
    false,
    "model: half the closed reads",
  );
  // A segment's row and its time index in D1, for the edge's reads (two rows written a segment).
  add(
    "closed segments' index in D1 (rows written)",
    (2 * L.markets * L.segmentsPerMarketHour) / 3_600,
    PRICES.d1RowsWritten,
    false,
    "model: two rows a segment",
  );

  // Subscribers: held (key checks, the shards' alarms and rows), and each connection's open and close once a deploy.
  const held = subscribers.held;
  // A shard re-checks each key with connections there once a minute (src/streams/shard-duties.ts,
  // KEY_RECHECK_EVERY_MS), one guard call a key: counted over the run's minute it is 0 or 1 a
  // connection by where the minute falls, so it is priced as the protocol makes it — each keyed
  // subscriber its own key (at most as many checks as the venue's keys on every shard).
  add(
    "stream key re-checks (guard calls, one a key and shard a minute)",
    Math.min(L.keyedSubscribers, L.keys * L.shards) / 60,
    PRICES.requests,
    false,
    "model: KEY_RECHECK_EVERY_MS",
  );
  // A shard's, from the shards' own counts over the shards the run placed them on (every object's
  // counts times the venue's shards was the line before: the hosts' alarms priced 132 times).
  const perShard = (n) => (n / held.seconds / subscribers.shards) * L.shards;
  add("stream shards' alarms (a shard)", perShard(held.alarmsBy.shard ?? 0), PRICES.requests, true, "subscribers");
  add("stream shards' rows written (a shard)", perShard(held.rowsWrittenBy.shard ?? 0), PRICES.rowsWritten, true, "subscribers");
  const perConnection = (phase) => Object.values(phase.calls).reduce((s, n) => s + n, 0) / subscribers.connections;
  add(
    "stream connects and closes (guard, shard calls), once a deploy",
    upgradesPerSecond * (perConnection(subscribers.opened) + perConnection(subscribers.closed) - Math.min(1, guardPerRead)),
    PRICES.requests,
    true,
    "subscribers",
  );
  add(
    "stream connects and closes (rows written)",
    (upgradesPerSecond * (subscribers.opened.rowsWritten + subscribers.closed.rowsWritten)) / subscribers.connections,
    PRICES.rowsWritten,
    true,
    "subscribers",
  );

  // Files: a market-day's and a market-hour's, fitted over the run's two sizes, at the venue's.
  const tradesPerMarketDay = (L.tradesPerSecond / L.markets) * 86_400;
  const marketDays = L.markets / 86_400;
  const marketHours = L.markets / 3_600;
  const day = (fit) => (fit.fixed + fit.perUnit * tradesPerMarketDay) * marketDays;
  const hour = (fit) => (fit.fixed + fit.perUnit * L.segmentsPerMarketHour) * marketHours;
  add("daily files and datasets: R2 class A, Standard (pieces, checksums)", day(files.dayFit.aStandard), PRICES.r2ClassA, true, "files");
  add("daily files and datasets: R2 class A, Infrequent Access (zips)", day(files.dayFit.aInfrequent), PRICES.r2ClassAInfrequent, true, "files");
  add("daily files and datasets: R2 class B (chunks, pieces read back)", day(files.dayFit.bStandard), PRICES.r2ClassB, true, "files");
  add("daily files and datasets: Workflow CPU, ms", day(files.dayFit.cpuSeconds) * 1000, PRICES.workersCpuMs, true, "files");
  add("daily files and datasets: host calls and Workflow instances", day(files.dayFit.calls) + marketDays, PRICES.requests, true, "files");
  add("hourly files: R2 class A, Standard (pieces, checksums)", hour(files.hourFit.aStandard), PRICES.r2ClassA, true, "files");
  add("hourly files: R2 class A, Infrequent Access (zips)", hour(files.hourFit.aInfrequent), PRICES.r2ClassAInfrequent, true, "files");
  add("hourly files: R2 class B (segments, pieces read back)", hour(files.hourFit.bStandard), PRICES.r2ClassB, true, "files");
  add("hourly files: Workflow CPU, ms", hour(files.hourFit.cpuSeconds) * 1000, PRICES.workersCpuMs, true, "files");
  add("hourly files: Workflow instances", marketHours, PRICES.workersRequests, true, "files");
  // An expired hour asked for is built again as the first time was (the same counted work a market-hour).
  const again = (fit) => hour(fit) * (L.bookHoursAgainPerSecond / marketHours);
  const asCounted = "model: 2,400 market-hours a day, as the hourly files count";
  add("hourly files built again when asked: R2 class A, Standard", again(files.hourFit.aStandard), PRICES.r2ClassA, false, asCounted);
  add("hourly files built again when asked: R2 class A, Infrequent Access", again(files.hourFit.aInfrequent), PRICES.r2ClassAInfrequent, false, asCounted);
  add("hourly files built again when asked: R2 class B", again(files.hourFit.bStandard), PRICES.r2ClassB, false, asCounted);
  add("hourly files built again when asked: Workflow CPU, ms", again(files.hourFit.cpuSeconds) * 1000, PRICES.workersCpuMs, false, asCounted);
  add("hourly files built again when asked: instances", L.bookHoursAgainPerSecond, PRICES.workersRequests, false, "model: one an hour asked for");
  // An expired day asked for is built again as the first time was, less its klines and datasets: the
  // day's counted work (theirs included, so an upper bound).
  const dayAgain = (fit) => day(fit) * (L.tradeDaysAgainPerSecond / marketDays);
  const dayCounted = "model: 100 market-days a day, as the daily files count";
  add("daily files built again when asked: R2 class A, Standard", dayAgain(files.dayFit.aStandard), PRICES.r2ClassA, false, dayCounted);
  add("daily files built again when asked: R2 class A, Infrequent Access", dayAgain(files.dayFit.aInfrequent), PRICES.r2ClassAInfrequent, false, dayCounted);
  add("daily files built again when asked: R2 class B", dayAgain(files.dayFit.bStandard), PRICES.r2ClassB, false, dayCounted);
  add("daily files built again when asked: Workflow CPU, ms", dayAgain(files.dayFit.cpuSeconds) * 1000, PRICES.workersCpuMs, false, dayCounted);
  add(
    "daily files built again when asked: host calls and instances",
    dayAgain(files.dayFit.calls) + L.tradeDaysAgainPerSecond,
    PRICES.requests,
    false,
    dayCounted,
  );
  // Tardis's datasets (docs/tardis.md#datasets): the trades' part is in the daily files' lines (the
  // files phase waits for them); the book's reads each segment again and makes pieces of eight, as
  // the hourly files do: their counted reads and CPU a segment, once more, and an instance a day.
  const perSegment = (fit) => fit.perUnit * L.segmentsPerMarketHour * marketHours + fit.fixed * marketDays;
  add(
    "datasets, the book's: R2 class B (segments, pieces read back)",
    perSegment(files.hourFit.bStandard),
    PRICES.r2ClassB,
    false,
    "model: the hourly files' a segment",
  );
  add("datasets, the book's: Workflow CPU, ms", perSegment(files.hourFit.cpuSeconds) * 1000, PRICES.workersCpuMs, false, "model: the hourly files' a segment");
  add("datasets: Workflow instances", marketDays, PRICES.workersRequests, false, "model: one a market-day");

  // A deploy a day: every host's restart, as the run's hosts' counted.
  const perRestart = (n) => ((n / benchHosts) * L.hosts * L.restartsPerDay) / 86_400;
  add("restarts: rows read", perRestart(restart.rowsRead), PRICES.rowsRead, true, "restart");
  add("restarts: rows written", perRestart(restart.rowsWritten), PRICES.rowsWritten, true, "restart");
  add("restarts: object requests", perRestart(Object.values(restart.calls).reduce((s, n) => s + n, 0) + restart.alarms), PRICES.requests, true, "restart");

  creditAllowances([...floor, ...items]);
  // A line priced wrong is a bench fault, never a smaller bill.
  const unpriced = [...floor, ...items].filter((item) => !Number.isFinite(item.dollars));
  if (unpriced.length > 0) throw new Error(`bench:cost priced no dollars for: ${unpriced.map((item) => item.name).join(", ")}`);
  const round = ({ price, ...item }) => ({ ...item, perSecond: Math.round(item.perSecond * 100) / 100, dollars: Math.round(item.dollars * 100) / 100 });
  const lineItems = [...floor, ...items].map(round);
  const beyond = items.reduce((s, i) => s + i.dollars, 0);
  const platformFloor = floor.reduce((s, i) => s + i.dollars, 0);
  return {
    load: L,
    readAnswers: reads.statuses,
    countsComplete: Math.round(countsComplete(reads) * 1000) / 1000,
    /** The read phase's counts by object class, as counted (rows written, calls, alarms). */
    readCounts: {
      rowsWrittenBy: reads.billed.rowsWrittenBy,
      calls: reads.billed.calls,
      alarmsBy: reads.billed.alarmsBy,
      seconds: reads.seconds,
      sent: reads.sent,
    },
    dollarsPerMonth: Math.round(beyond + platformFloor),
    platformFloorDollarsPerMonth: Math.round(platformFloor),
    beyondFloorDollarsPerMonth: Math.round(beyond),
    modelled: lineItems.filter((i) => !i.measured).map((i) => ({ name: i.name, why: i.from })),
    perRequest: { cpuMs: Math.round(cpuMsPerRequest * 1000) / 1000, guardCalls: Math.round(guardPerRead * 1000) / 1000 },
    lineItems: lineItems.map((i) => ({ ...i, share: Math.round((i.dollars / (beyond + platformFloor)) * 1000) / 10 })),
  };
}

/**
 * A check of the read phase's counting: every signed request its key's gate takes (admitted or
 * refused by the limit) is counted in the key's usage, so the usage the keys' accounts read after the
 * phase, over the requests sent, is 1 when no count went missing (runs of 2026-11-27 counted 0.67 of
 * the calls the ledgers were told of, and their read lines low). A request refused before its gate
 * took it (401, 403: a timestamp out of its window when the machine stalls) is counted by no key and
 * left out.
 */
export function countsComplete(reads) {
  return reads.usage.counted / Math.max(1, reads.usage.taken);
}

/**
 * Dollars for each line, what a month includes credited once per unit (rows written, requests, …)
 * — to the unit's largest line — not once per line, which counted a 50 M-row allowance for every
 * line priced in rows. A fixed line (no `price`) keeps its dollars.
 */
export function creditAllowances(items) {
  const byPrice = new Map();
  for (const item of items) {
    if (!item.price) continue;
    item.dollars = dollars(item.perSecond, { perMillion: item.price.perMillion });
    byPrice.set(item.price, [...(byPrice.get(item.price) ?? []), item]);
  }
  for (const [price, lines] of byPrice) {
    if (!price.includedPerMonth) continue;
    const largest = lines.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
    const units = lines.reduce((sum, line) => sum + line.perSecond, 0);
    // What is included comes off the largest line, never below zero, and never more than all lines used.
    const credit = dollars(Math.min(units, price.includedPerMonth / SECONDS_PER_MONTH), { perMillion: price.perMillion });
    largest.dollars = Math.max(0, largest.dollars - credit);
  }
  return items;
}
