import { introspectWorkflow, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../client/src/checksum";
import { DAY_MS } from "../../src/domain/intervals";
import { writeDailyFiles } from "../../src/history/archive-days";
import { putKlineFiles, putTradeZips } from "../../src/history/daily-files-workflow";
import { deflatePiece, EMPTY_ENTRY, putBothPieces } from "../../src/history/zip-pieces";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import type { MarketStore } from "../../src/writes/market-store";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { recordingBucket } from "../support/recording-bucket";
import { defaultMarkets, hostOf } from "../support/registry";

/** The one file in a zip, read as any unzip would: the local header, the deflated data, its CRC. */
async function unzipOne(zip: Uint8Array): Promise<{ name: string; text: string }> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  expect(view.getUint32(0, true), "a local file header").toBe(0x04034b50);
  const [crc, size, length, nameLength, extra] = [
    view.getUint32(14, true),
    view.getUint32(18, true),
    view.getUint32(22, true),
    view.getUint16(26, true),
    view.getUint16(28, true),
  ];
  const name = new TextDecoder().decode(zip.subarray(30, 30 + nameLength));
  const data = zip.subarray(30 + nameLength + extra, 30 + nameLength + extra + size);
  const raw = new Uint8Array(await new Response(new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).arrayBuffer());
  expect([raw.length, crc32(raw)], `${name}: size and CRC as the headers say`).toEqual([length, crc]);
  return { name, text: new TextDecoder().decode(raw) };
}

async function sha256(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const yesterday = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS;
const date = new Date(yesterday).toISOString().slice(0, 10);
const archive = (body: unknown) =>
  callJson("/admin/archive", { method: "POST", headers: { ...ADMIN, "Content-Type": "application/json" }, body: JSON.stringify(body) });

describe("daily files in Binance's public-data layout (docs/history.md#daily-files)", () => {
  it("writes a day's trades, aggTrades and klines as zips with checksums; the CSV is what REST serves", async () => {
    const trades = Array.from({ length: 300 }, (_, i) => ({
      id: `d${i}`,
      price: `0.0${3500 + (i % 17)}`.padEnd(7, "0"),
      quantity: `${1 + (i % 5)}.0000`,
      side: i % 3 === 0 ? ("sell" as const) : ("buy" as const),
      time: yesterday + i * 287_000,
    }));
    expect((await ingest(env, "*", { symbol: "ETHBTC", trades })).acceptedTrades).toBe(300);
    const { status, body } = await archive({ date, symbols: ["ETHBTC"] });
    expect(status, JSON.stringify(body)).toBe(200);
    const written = body.markets[0];
    expect(written).toMatchObject({ symbol: "ETHBTC", date, trades: 300 });
    expect(written.files.map((f: { key: string }) => f.key).sort()).toEqual(
      [
        `data/spot/daily/trades/ETHBTC/ETHBTC-trades-${date}.zip`,
        `data/spot/daily/aggTrades/ETHBTC/ETHBTC-aggTrades-${date}.zip`,
        `data/spot/daily/klines/ETHBTC/1m/ETHBTC-1m-${date}.zip`,
        `data/spot/daily/klines/ETHBTC/1h/ETHBTC-1h-${date}.zip`,
        `data/spot/daily/klines/ETHBTC/1d/ETHBTC-1d-${date}.zip`,
      ].sort(),
    );

    const file = await call(`/data/spot/daily/trades/ETHBTC/ETHBTC-trades-${date}.zip`);
    expect(file.status).toBe(200);
    expect(file.headers.get("Content-Type")).toBe("application/zip");
    expect(file.headers.get("Cache-Control"), "a day late trades may still change").toBe("public, max-age=300");
    const zip = new Uint8Array(await file.arrayBuffer());
    const { name, text } = await unzipOne(zip);
    expect(name).toBe(`ETHBTC-trades-${date}.csv`);
    const rest = (await callJson(`/api/trades/ETHBTC?startTime=${yesterday}&endTime=${yesterday + DAY_MS - 1}&limit=1000`)).body as {
      tradeId: number;
      price: string;
      quantity: string;
      side: string;
      time: number;
    }[];
    expect(rest).toHaveLength(300);
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(300);
    lines.forEach((line, i) => {
      const [id, price, qty, quoteQty, time, isBuyerMaker, isBestMatch] = line.split(",");
      const t = rest[i]!;
      expect([Number(id), price, qty, Number(time), isBuyerMaker, isBestMatch], `row ${i}`).toEqual([
        t.tradeId,
        t.price,
        t.quantity,
        t.time,
        t.side === "sell" ? "True" : "False",
        "True",
      ]);
      expect(Number(quoteQty)).toBeCloseTo(Number(price) * Number(qty), 9);
    });

    // The checksum is sha256sum's line for the zip, and verifies.
    const checksum = await (await call(`/data/spot/daily/trades/ETHBTC/ETHBTC-trades-${date}.zip.CHECKSUM`)).text();
    expect(checksum).toBe(`${await sha256(zip)}  ETHBTC-trades-${date}.zip\n`);

    // The 1m klines file holds what GET /api/klines answers for the day.
    const klines = await unzipOne(new Uint8Array(await (await call(`/data/spot/daily/klines/ETHBTC/1m/ETHBTC-1m-${date}.zip`)).arrayBuffer()));
    const candles = (await callJson(`/api/klines/ETHBTC?interval=1m&startTime=${yesterday}&endTime=${yesterday + DAY_MS - 1}&limit=1000`)).body;
    expect(klines.text.trimEnd().split("\n")).toEqual(
      candles.map((k: Record<string, string | number>) =>
        [k.openTime, k.open, k.high, k.low, k.close, k.volume, k.closeTime, k.quoteVolume, k.tradeCount, k.takerBuyVolume, k.takerBuyQuoteVolume, 0].join(","),
      ),
    );

    // Written again: the same bytes.
    await archive({ date, symbols: ["ETHBTC"] });
    const again = new Uint8Array(await (await call(`/data/spot/daily/trades/ETHBTC/ETHBTC-trades-${date}.zip`)).arrayBuffer());
    expect(await sha256(again), "rewriting a day yields the same bytes").toBe(await sha256(zip));

    // A late trade into that day: the next run, for any day, writes it again with the trade.
    expect(
      (await ingest(env, "*", { symbol: "ETHBTC", trades: [{ id: "late-1", price: "0.03600", quantity: "1.0000", side: "buy", time: yesterday + 5_000 }] }))
        .acceptedTrades,
    ).toBe(1);
    const before = new Date(yesterday - DAY_MS).toISOString().slice(0, 10);
    const rerun = await archive({ date: before, symbols: ["ETHBTC"] });
    expect(rerun.body.markets[0].rewritten, JSON.stringify(rerun.body)).toEqual([date]);
    const rewritten = await unzipOne(new Uint8Array(await (await call(`/data/spot/daily/trades/ETHBTC/ETHBTC-trades-${date}.zip`)).arrayBuffer()));
    expect(rewritten.text.trimEnd().split("\n"), "the late trade is in the day's file").toHaveLength(301);
    expect((await archive({ date: before, symbols: ["ETHBTC"] })).body.markets[0].rewritten, "written once: the mark is cleared").toBeUndefined();

    const listing = (await callJson("/data/spot/daily/trades/ETHBTC/")).body;
    expect(listing.files.map((f: { name: string }) => f.name)).toEqual([`ETHBTC-trades-${date}.zip`, `ETHBTC-trades-${date}.zip.CHECKSUM`]);
  });

  it("a market that did not trade writes nothing; a day not ended, or not a day, is 400; a file never written is 404", async () => {
    const quiet = await archive({ date, symbols: ["SOLBTC"] });
    expect(quiet.body.markets[0]).toMatchObject({ symbol: "SOLBTC", trades: 0, files: [] });
    const today = new Date().toISOString().slice(0, 10);
    expect((await archive({ date: today })).status).toBe(400);
    expect((await archive({ date: "2026-02-30" })).status).toBe(400);
    expect((await call(`/data/spot/daily/trades/SOLBTC/SOLBTC-trades-${date}.zip`)).status).toBe(404);
    expect((await call("/data/spot/daily/trades/SOLBTC/not-a-file.zip")).status).toBe(404);
    expect((await callJson("/admin/archive", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ date }) })).status).toBe(
      401,
    );
  });

  it("which days a run hands on is one read of the day's candle, and the day is opened a quarter of its minutes a turn (fails before: a row read a trading minute, every minute in one turn of the host's thread)", async () => {
    const day = yesterday - 2 * DAY_MS;
    const trades = Array.from({ length: 200 }, (_, i) => ({
      id: `h${i}`,
      price: "0.03600",
      quantity: "1.0000",
      side: "buy" as const,
      time: day + i * 7 * 60_000,
    }));
    expect((await ingest(env, "*", { symbol: "ETHBTC", trades })).acceptedTrades, "200 trades in 200 minutes").toBe(200);
    const host = await hostOf("ETHBTC");
    await runInDurableObject(host, (instance: MarketObject) => {
      (instance.engine("ETHBTC") as unknown as { minutes: { flushedAt: number } }).minutes.flushedAt = 0; // as if a minute had passed
    });
    // Late trades' minutes are written at once or by this alarm: stored either way before the count.
    await runDurableObjectAlarm(host);
    await ensureRegistry(env);
    const market = findMarket("ETHBTC")!;
    const { handed, rowsRead } = await runInDurableObject(host, (instance: MarketObject) => {
      const { candles } = (instance.engine("ETHBTC") as unknown as { store: MarketStore }).store;
      const before = candles.bucketRowsRead;
      const handed = instance.daysToHand(market, day);
      return { handed, rowsRead: candles.bucketRowsRead - before };
    });
    expect(handed, "the day's trades").toMatchObject({ trades: 200 });
    const stored = await runInDurableObject(host, (instance: MarketObject) =>
      (instance.engine("ETHBTC") as unknown as { store: MarketStore }).store.candles.storedMinutes(day, day + DAY_MS - 1),
    );
    expect(stored.length, "the day's minutes, stored").toBe(200);

    // Opening the day for its files reads its minutes a quarter-day a turn, none in the turn it is called.
    const turns = await runInDurableObject(host, async (instance: MarketObject) => {
      const { candles } = (instance.engine("ETHBTC") as unknown as { store: MarketStore }).store;
      let before = candles.bucketRowsRead;
      const opening = instance.openDay(market, day);
      let done = false;
      void opening.then(() => {
        done = true;
      });
      const read: number[] = [];
      while (!done) {
        read.push(candles.bucketRowsRead - before);
        before = candles.bucketRowsRead;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      read.push(candles.bucketRowsRead - before);
      return { read, opened: await opening };
    });
    expect(turns.opened, "the day as opened").toMatchObject({ trades: 200, live: 200 });
    expect(turns.read[0], "candle rows read in the turn the day is opened (fails before: all 200 of its minutes)").toBe(0);
    expect(Math.max(...turns.read), `the most candle rows read between two turns (${turns.read.join(", ")})`).toBeLessThan(150);
    expect(rowsRead, "candle rows read to hand the day on").toBeLessThanOrEqual(2);
  });

  it("every family of files answers its file, its CHECKSUM and its listing (with or without a trailing slash); a name, kind, interval or symbol not its own is 404", async () => {
    const hour = `${date}-07`;
    const families = [
      {
        folder: "data/spot/daily/klines/BTCUSDT/1h",
        file: `BTCUSDT-1h-${date}.zip`,
        other: `BTCUSDT-1m-${date}.zip`,
        unknown: "data/spot/daily/klines/BTCUSDT/5m/",
      },
      {
        folder: "data/spot/daily/aggTrades/BTCUSDT",
        file: `BTCUSDT-aggTrades-${date}.zip`,
        other: `BTCUSDT-trades-${date}.zip`,
        unknown: "data/spot/daily/orders/BTCUSDT/",
      },
      {
        folder: "data/spot/hourly/bookTicker/BTCUSDT",
        file: `BTCUSDT-bookTicker-${hour}.zip`,
        other: `BTCUSDT-bookTicker-${date}.zip`,
        unknown: "data/spot/hourly/trades/BTCUSDT/",
      },
    ];
    for (const { folder, file, other, unknown } of families) {
      await env.HISTORY.put(`${folder}/${file}`, "zip bytes");
      await env.HISTORY.put(`${folder}/${file}.CHECKSUM`, `sum  ${file}\n`);
      const zip = await call(`/${folder}/${file}`);
      expect([zip.status, zip.headers.get("Content-Type"), await zip.text()], `${folder}: the file`).toEqual([200, "application/zip", "zip bytes"]);
      const sum = await call(`/${folder}/${file}.CHECKSUM`);
      expect([sum.status, await sum.text()], `${folder}: its CHECKSUM`).toEqual([200, `sum  ${file}\n`]);
      for (const path of [`/${folder}`, `/${folder}/`]) {
        const listing = await callJson(path);
        expect([listing.status, listing.body.prefix, listing.body.files.map((f: { name: string }) => f.name)], `${path}: the listing`).toEqual([
          200,
          `${folder}/`,
          [file, `${file}.CHECKSUM`],
        ]);
      }
      expect((await call(`/${folder}/${other}`)).status, `${folder}: another family's name`).toBe(404);
      expect((await call(`/${unknown}`)).status, `/${unknown}: not a kind or interval written`).toBe(404);
      expect((await call(`/${folder.replace("BTCUSDT", "btc-usdt")}/`)).status, `${folder}: not a symbol`).toBe(404);
    }
  });

  it("puts a day's zips in R2's Infrequent Access class and their checksums in Standard (docs/history.md#storage-class; fails before: every file Standard)", async () => {
    // The Workflow's own puts, through a recording pass-through of the bucket (the local runtime stores every class as Standard).
    const recorded = recordingBucket(env.HISTORY);
    const market = (await defaultMarkets()).find((m) => m.symbol === "BTCUSDC")!;
    const day = yesterday - 3 * DAY_MS;
    const kline = {
      openTime: day,
      open: "1",
      high: "1",
      low: "1",
      close: "1",
      volume: "1",
      closeTime: day + 59_999,
      quoteVolume: "1",
      tradeCount: 1,
      takerBuyVolume: "1",
      takerBuyQuoteVolume: "1",
    };
    await putKlineFiles(recorded.bucket, "BTCUSDC", day, { "1m": [kline], "1h": [kline], "1d": [kline] });
    const piece = { trades: deflatePiece("1,1,1,1,1,True,True\n", EMPTY_ENTRY, true), aggTrades: deflatePiece("1,1,1,1,1,1,True,True\n", EMPTY_ENTRY, true) };
    await putBothPieces(env.HISTORY, "daily-files-work/test/1.deflate", [piece.trades.bytes], [piece.aggTrades.bytes]);
    await putTradeZips(
      recorded.bucket,
      { market, day },
      {
        entries: { trades: piece.trades.entry, aggTrades: piece.aggTrades.entry },
        pieces: [{ first: 1, trades: piece.trades.bytes.length, aggTrades: piece.aggTrades.bytes.length }],
      },
      () => "daily-files-work/test/1.deflate",
    );
    const classes = [...recorded.classes];
    const zips = classes.filter(([key]) => key.endsWith(".zip"));
    const checksums = classes.filter(([key]) => key.endsWith(".CHECKSUM"));
    expect(zips.length, "the day's zips: trades, aggTrades, klines 1m, 1h, 1d").toBe(5);
    expect(
      zips.filter(([, storageClass]) => storageClass !== "InfrequentAccess"),
      "zips not put Infrequent Access",
    ).toEqual([]);
    expect(
      checksums.map(([, storageClass]) => storageClass),
      "the checksums' class",
    ).toEqual(Array.from({ length: 5 }, () => "Standard"));
  });

  it("a day of archived chunks and hot trades is built a page a step, its pieces one zip: every trade once, in trade id order (docs/history.md#daily-files)", async () => {
    const market = (await defaultMarkets()).find((m) => m.symbol === "SOLBTC")!;
    const day = yesterday - 4 * DAY_MS;
    const trades = Array.from({ length: 1_250 }, (_, i) => ({
      id: `p${i}`,
      price: "0.00150",
      quantity: `${1 + (i % 7)}.00`,
      side: i % 2 === 0 ? ("buy" as const) : ("sell" as const),
      time: day + i * 60_000,
    }));
    for (let i = 0; i < trades.length; i += 250) {
      expect((await ingest(env, "*", { symbol: "SOLBTC", trades: trades.slice(i, i + 250) })).acceptedTrades).toBe(250);
    }
    // Chunks of 100 go to R2; the newest stay hot: the day is read from both.
    await runInDurableObject(await hostOf("SOLBTC"), (instance: MarketObject) => instance.archiveTrades("SOLBTC"));
    const chunks = await env.HISTORY.list({ prefix: "archive/trades/SOLBTC/" });
    expect(chunks.objects.length, "chunks archived").toBeGreaterThan(0);
    const [written] = await writeDailyFiles(env, day, [market], 30_000);
    expect(written, JSON.stringify(written)).toMatchObject({ trades: 1_250 });
    expect(written!.skipped, "trades files written").toBeUndefined();
    // The host opened the day and answered its pages: archived chunks named, hot blocks copied as stored.
    expect(written!.host!.calls, "the host's calls: the open and at least a page of chunks and one of blocks").toBeGreaterThanOrEqual(3);
    expect(written!.host!.bytes, "hot blocks' bytes copied by the host").toBeGreaterThan(0);
    const name = new Date(day).toISOString().slice(0, 10);
    const csv = await unzipOne(new Uint8Array(await (await call(`/data/spot/daily/trades/SOLBTC/SOLBTC-trades-${name}.zip`)).arrayBuffer()));
    const ids = csv.text
      .trimEnd()
      .split("\n")
      .map((line) => Number(line.split(",")[0]));
    expect(ids.length, "every trade once").toBe(1_250);
    expect(
      ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1),
      "trade ids in order, none missing",
    ).toBe(true);
    const pieces = await env.HISTORY.list({ prefix: "daily-files-work/SOLBTC/" });
    expect(pieces.objects, "the pieces deleted once the zips are put").toEqual([]);
  });

  it("a late trade that reaches a day after its Workflow opened it is in its files from the next run (the mark is taken in the same turn as the day)", async () => {
    const market = (await defaultMarkets()).find((m) => m.symbol === "SOLUSDT")!;
    const day = yesterday - DAY_MS;
    const trade = (n: number) => ({ id: `late-${n}`, price: "150.000", quantity: "1.00", side: "buy" as const, time: day + n * 60_000 });
    await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade(1)] }); // marks the day
    const host = await hostOf("SOLUSDT");
    const marked = () =>
      runInDurableObject(host, async (instance: MarketObject) => (instance.engine("SOLUSDT") as unknown as { state: { dirtyDays: number[] } }).state.dirtyDays);
    expect(await marked(), "marked by the late trade").toContain(day);
    // The Workflow's first step: the day is taken and its mark cleared; a trade after it marks it again.
    await runInDurableObject(host, async (instance: MarketObject) => instance.openDay(market, day));
    expect(await marked(), "cleared when opened").not.toContain(day);
    await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade(2)] });
    expect(await marked(), "marked again").toContain(day);
    expect((await archive({ date, symbols: ["SOLUSDT"] })).body.markets[0].rewritten).toEqual([new Date(day).toISOString().slice(0, 10)]);
    const dayName = new Date(day).toISOString().slice(0, 10);
    const zip = new Uint8Array(await (await call(`/data/spot/daily/klines/SOLUSDT/1m/SOLUSDT-1m-${dayName}.zip`)).arrayBuffer());
    expect((await unzipOne(zip)).text.trim().split("\n"), "both late trades' minutes").toHaveLength(2);
  });

  it("one market's failing day does not hold back the others: they are written, it is reported on /status and its day marked again (fails before: the run threw)", async () => {
    await using workflows = await introspectWorkflow(env.DAILY_FILES);
    await workflows.modifyAll(async (m) => {
      await m.disableSleeps();
      await m.disableRetryDelays();
    });
    const markets = await defaultMarkets();
    const day = yesterday - 2 * DAY_MS;
    const trades = (prefix: string, price: string, quantity: string) =>
      Array.from({ length: 150 }, (_, i) => ({ id: `${prefix}${i}`, price, quantity, side: "sell" as const, time: day + i * 1000 }));
    await ingest(env, "*", { symbol: "XRPUSDT", trades: trades("x", "0.6000", "10.0") });
    await ingest(env, "*", { symbol: "BTCUSDC", trades: trades("u", "97000.00", "0.00100") });
    // XRPUSDT's first chunk goes to R2, and its object is lost there: its day cannot be read.
    await runInDurableObject(await hostOf("XRPUSDT"), (instance: MarketObject) => instance.archiveTrades("XRPUSDT"));
    const lost = await env.HISTORY.list({ prefix: "archive/trades/XRPUSDT/" });
    expect(lost.objects.length, "a chunk archived").toBeGreaterThan(0);
    await env.HISTORY.delete(lost.objects.map((o) => o.key));
    const written = await writeDailyFiles(
      env,
      day,
      ["XRPUSDT", "BTCUSDC"].map((s) => markets.find((m) => m.symbol === s)!),
      60_000,
    );
    expect(
      written.find((w) => w.symbol === "BTCUSDC"),
      "the other market's day",
    ).toMatchObject({ trades: 150, files: expect.any(Array) });
    expect(written.find((w) => w.symbol === "BTCUSDC")!.files, "its five files").toHaveLength(5);
    const failing = written.find((w) => w.symbol === "XRPUSDT")!;
    expect(failing.failed, JSON.stringify(failing)).toMatch(/archive chunk 0 of XRPUSDT is missing/);
    const marked = await runInDurableObject(
      await hostOf("XRPUSDT"),
      async (instance: MarketObject) => (instance.engine("XRPUSDT") as unknown as { state: { dirtyDays: number[] } }).state.dirtyDays,
    );
    expect(marked, "marked again for the next run").toContain(day);
    const status = await call("/status");
    expect(await status.text(), "listed as failing on /status").toContain(failing.instance!);
  });

  // Last in the file: its instances (every market's marked days too) run on after its answer.
  it("a whole venue's day is answered pending at once, its instances at work (fails before: the answer waited for every market's)", async () => {
    const day = yesterday - 5 * DAY_MS;
    const trades = Array.from({ length: 10 }, (_, i) => ({
      id: `all-${i}`,
      price: "97000.00",
      quantity: "0.00100",
      side: "buy" as const,
      time: day + i * 60_000,
    }));
    expect((await ingest(env, "*", { symbol: "BTCUSDT", trades })).acceptedTrades).toBe(10);
    const { status, body } = await archive({ date: new Date(day).toISOString().slice(0, 10) });
    expect(status).toBe(200);
    const btc = body.markets.find((m: { symbol: string }) => m.symbol === "BTCUSDT");
    expect(btc, JSON.stringify(btc)).toMatchObject({ trades: 10, pending: true, files: [] });
    expect(Object.keys(btc).sort(), "the answer's fields, as documented").toEqual(["date", "files", "instance", "pending", "symbol", "trades"]);
    const instance = await env.DAILY_FILES.get(btc.instance);
    await until(async () => ((await instance.status()).status === "complete" ? true : undefined), { what: "the day's instance complete" });
  });
});
