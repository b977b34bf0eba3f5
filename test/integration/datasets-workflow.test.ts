import { introspectWorkflowInstance, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import { objectCalls } from "../../src/core/object-ids";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/domain/intervals";
import { csvName, dailyKey, tradesCsv } from "../../src/history/daily-files";
import { DATASET_HEADERS, datasetKey } from "../../src/history/datasets";
import { type DatasetFiles, datasetsInstanceId } from "../../src/history/datasets-workflow";
import type { ArchivedTrade } from "../../src/history/trade-archive";
import { zipOne } from "../../src/history/zip";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { call } from "../support/http";
import { hostOf } from "../support/registry";

type Uploads = { bookHistory: { upload(symbol: string): Promise<number> } };
const SYMBOL = "SOLBTC"; // prices at 7 decimals, quantities at 2
/** The day built: two days ahead of the real clock, so the market's alarm never comes due during the test (book-files-workflow.test.ts). */
const D = Math.floor(Date.now() / DAY_MS) * DAY_MS + 2 * DAY_MS;
const level = (units: number) => (units / 1e7).toFixed(7);

/** The batches: two before the day (its opening book), seven in it (one removes a level), one the next day (closing the day's last segment). */
const batches: { time: number; bids: [string, string][]; asks: [string, string][] }[] = [
  { time: D - 2 * HOUR_MS, bids: [[level(1_990), "1.00"]], asks: [[level(3_010), "2.00"]] },
  { time: D - HOUR_MS, bids: [[level(1_995), "3.00"]], asks: [[level(3_005), "4.00"]] },
  { time: D + HOUR_MS, bids: [[level(1_999), "1.50"]], asks: [[level(3_001), "2.50"]] },
  { time: D + HOUR_MS + 1_000, bids: [[level(1_998), "1.00"]], asks: [[level(3_001), "0.50"]] },
  { time: D + 5 * HOUR_MS, bids: [[level(1_999), "0"]], asks: [[level(3_002), "7.00"]] },
  { time: D + 12 * HOUR_MS, bids: [[level(1_997), "2.00"]], asks: [[level(3_000), "1.00"]] },
  { time: D + 23 * HOUR_MS, bids: [[level(1_996), "9.00"]], asks: [[level(3_010), "0"]] },
  { time: D + 23 * HOUR_MS + 59 * MINUTE_MS, bids: [[level(1_990), "5.00"]], asks: [[level(3_003), "3.00"]] },
  { time: D + DAY_MS + 10 * MINUTE_MS, bids: [[level(1_980), "1.00"]], asks: [[level(3_020), "1.00"]] },
];

/** A plain model of the book: text levels, best first. */
function modelBook() {
  const bids = new Map<string, string>();
  const asks = new Map<string, string>();
  const apply = (b: [string, string][], a: [string, string][]) => {
    for (const [p, q] of b) q === "0" ? bids.delete(p) : bids.set(p, q);
    for (const [p, q] of a) q === "0" ? asks.delete(p) : asks.set(p, q);
  };
  const sorted = (side: Map<string, string>, descending: boolean) =>
    [...side].sort((x, y) => (descending ? Number(y[0]) - Number(x[0]) : Number(x[0]) - Number(y[0])));
  return { apply, bids: () => sorted(bids, true), asks: () => sorted(asks, false) };
}

/** Trades of the day, in trade id order: three in the hour at D + 1 h (two in its first minute), one at 23:59. */
const trades: ArchivedTrade[] = [
  { tradeId: 1, id: "a", price: level(2_000), quantity: "1.00", side: "buy", time: D + HOUR_MS + 200 },
  { tradeId: 2, id: "b", price: level(2_001), quantity: "0.50", side: "sell", time: D + HOUR_MS + 30_000 },
  { tradeId: 3, id: "c", price: level(2_002), quantity: "2.00", side: "buy", time: D + HOUR_MS + 90_000 },
  { tradeId: 4, id: "d", price: level(2_003), quantity: "3.00", side: "sell", time: D + 23 * HOUR_MS + 59 * MINUTE_MS },
];

const gunzipLines = (bytes: ArrayBuffer) => gunzipSync(new Uint8Array(bytes)).toString("utf8").trimEnd().split("\n");

describe("a market's day as Tardis's datasets, built by a Workflow from R2 and D1 (docs/tardis.md#datasets)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("trades, incremental_book_L2, book_snapshot_25 and quotes hold the day as a plain model rebuilds it; a closed minute of the feed, trades included, is read at the edge (fails before: no datasets, and every trade of the feed was the host's)", async () => {
    await ensureRegistry(env);
    const market = findMarket(SYMBOL)!;
    for (const [i, batch] of batches.entries()) {
      vi.useFakeTimers({ toFake: ["Date"], now: batch.time });
      const book = { type: i === 0 ? "snapshot" : "delta", sequence: i + 1, bids: batch.bids, asks: batch.asks };
      expect((await ingest(env, "*", { symbol: SYMBOL, book: book as never })).book, `batch ${i + 1}`).toBe("applied");
    }
    vi.useRealTimers();
    const host = await hostOf(SYMBOL);
    await runInDurableObject(host, (object: MarketObject) => (object.engine(SYMBOL) as unknown as Uploads).bookHistory.upload(SYMBOL));

    // The day's trades zip, as the daily files' instance writes it (tested in history-files.test.ts): the datasets read the trades from it.
    const key = dailyKey("trades", SYMBOL, D);
    await env.HISTORY.put(key, await zipOne(csvName(key), new TextEncoder().encode(tradesCsv(trades)), new Date(D)));

    const id = datasetsInstanceId(SYMBOL, D, 1);
    const instance = await introspectWorkflowInstance(env.DATASETS, id);
    await instance.modify(async (m) => {
      await m.disableSleeps();
      await m.disableRetryDelays();
    });
    const hostCalls = objectCalls.market;
    await env.DATASETS.create({ id, params: { market, day: D, trades: true } });
    await instance.waitForStatus("complete");
    expect(objectCalls.market, "no market's host called to build the day").toBe(hostCalls);
    const output = (await instance.getOutput()) as DatasetFiles;
    expect(output.files.map((f) => f.key).sort()).toEqual(
      (["trades", "incremental_book_L2", "book_snapshot_25", "quotes"] as const).map((type) => datasetKey(type, D, SYMBOL)).sort(),
    );

    const file = async (type: "trades" | "incremental_book_L2" | "book_snapshot_25" | "quotes") => {
      const response = await call(`/tardis/v1/datasets/binance/${type}/${datasetKey(type, D, SYMBOL).split("/").slice(4, 7).join("/")}/${SYMBOL}.csv.gz`);
      expect(response.status, `GET the ${type} dataset`).toBe(200);
      return gunzipLines(await response.arrayBuffer());
    };
    const file2026 = async (type: "quotes") => {
      const response = await call(`/tardis/v1/datasets/binance/${type}/2026/01/05/${SYMBOL}.csv.gz`);
      expect(response.status, `GET the ${type} dataset of 2026-01-05`).toBe(200);
      return gunzipLines(await response.arrayBuffer());
    };
    expect(await file("trades"), "the day's trades, in Tardis's columns").toEqual([
      DATASET_HEADERS.trades.trimEnd(),
      ...trades.map((t) => `binance,${SYMBOL},${t.time}000,${t.time}000,${t.tradeId},${t.side},${t.price},${t.quantity}`),
    ]);

    // The model: the book at the day's start as snapshot rows, then each batch's levels.
    const model = modelBook();
    for (const batch of batches.filter((b) => b.time < D)) model.apply(batch.bids, batch.asks);
    const us = (ms: number) => `${ms}000`;
    const row = (time: number, snapshot: boolean, side: string, [price, amount]: [string, string]) =>
      `binance,${SYMBOL},${us(time)},${us(time)},${snapshot},${side},${price},${amount}`;
    const expected = [...model.bids().map((l) => row(D, true, "bid", l)), ...model.asks().map((l) => row(D, true, "ask", l))];
    const quote = () => {
      const [bid, ask] = [model.bids()[0], model.asks()[0]];
      return `${ask?.[1] ?? ""},${ask?.[0] ?? ""},${bid?.[0] ?? ""},${bid?.[1] ?? ""}`;
    };
    const quotes = [`binance,${SYMBOL},${us(D)},${us(D)},${quote()}`];
    for (const batch of batches.filter((b) => b.time >= D && b.time < D + DAY_MS)) {
      const before = quote();
      model.apply(batch.bids, batch.asks);
      expected.push(...batch.bids.map((l) => row(batch.time, false, "bid", l)), ...batch.asks.map((l) => row(batch.time, false, "ask", l)));
      if (quote() !== before) quotes.push(`binance,${SYMBOL},${us(batch.time)},${us(batch.time)},${quote()}`);
    }
    const l2 = await file("incremental_book_L2");
    expect(l2[0], "the documented columns").toBe(DATASET_HEADERS.incremental_book_L2.trimEnd());
    expect(l2.slice(1), "the day's book, level by level").toEqual(expected);
    expect((await file("quotes")).slice(1), "a row each time the best bid or ask changed").toEqual(quotes);
    const snapshots = await file("book_snapshot_25");
    expect(snapshots[0]!.split(","), "4 + 25 × 4 columns").toHaveLength(104);
    const last = snapshots.at(-1)!.split(",");
    const [bids, asks] = [model.bids(), model.asks()];
    expect(last.slice(4, 4 + 4 * 4), "the day's last book, best levels first").toEqual(
      [0, 1, 2, 3].flatMap((i) => [asks[i]?.[0] ?? "", asks[i]?.[1] ?? "", bids[i]?.[0] ?? "", bids[i]?.[1] ?? ""]),
    );

    // A day not ended: 404, said plainly.
    const future = new Date(D + 5 * DAY_MS).toISOString().slice(0, 10).split("-").join("/");
    const notEnded = await call(`/tardis/v1/datasets/binance/quotes/${future}/${SYMBOL}.csv.gz`);
    expect(notEnded.status).toBe(404);
    expect(((await notEnded.json()) as { detail: string }).detail).toMatch(/has not been built: a day's datasets are built after it ends/);
    // A past day not kept (expired after 30 days, or never built): handed to the Workflow, 404 with when to ask again, then served.
    const again = await introspectWorkflowInstance(env.DATASETS, `tardis-${SYMBOL}-2026-01-05-again-${Math.floor(Date.now() / (7 * DAY_MS))}`);
    await again.modify(async (m) => {
      await m.disableSleeps();
    });
    const expired = await call(`/tardis/v1/datasets/binance/quotes/2026/01/05/${SYMBOL}.csv.gz`);
    expect(expired.status).toBe(404);
    expect(expired.headers.get("Retry-After")).toBe("60");
    expect(((await expired.json()) as { detail: string }).detail).toMatch(/is being built .*ask again in a minute/);
    await again.waitForStatus("complete");
    expect(await file2026("quotes"), "built again: the day's quotes (none: no book then)").toEqual([DATASET_HEADERS.quotes.trimEnd()]);

    // A closed minute of the feed, read where it lies — the book from closed segments, the trades from the built day: no market's host called.
    vi.useFakeTimers({ toFake: ["Date"], now: D + 3 * DAY_MS });
    const from = new Date(D + HOUR_MS).toISOString();
    const filters = encodeURIComponent(
      JSON.stringify([
        { channel: "depth", symbols: ["solbtc"] },
        { channel: "depthSnapshot", symbols: ["solbtc"] },
        { channel: "trade", symbols: ["solbtc"] },
      ]),
    );
    const before = objectCalls.market;
    const minute = await call(`/tardis/v1/data-feeds/binance?from=${from}&offset=0&filters=${filters}`);
    expect(minute.status).toBe(200);
    expect(minute.headers.get("X-Tardis-Read"), "closed history and the built day only").toBe("edge");
    expect(minute.headers.get("Cache-Control"), "late trades may still reach the day").toBe("public, max-age=0");
    expect(objectCalls.market, "no market's host called for a closed minute").toBe(before);
    // `Content-Encoding: gzip`: the runtime's fetch hands the body decoded.
    expect(minute.headers.get("Content-Encoding")).toBe("gzip");
    const lines = (await minute.text())
      .trimEnd()
      .split("\n")
      .map((l) => ({ at: l.slice(0, 28), message: JSON.parse(l.slice(29)) }));
    expect(lines.map((l) => l.message.stream)).toEqual(["solbtc@depthSnapshot", "solbtc@depth@100ms", "solbtc@trade", "solbtc@depth@100ms", "solbtc@trade"]);
    expect(lines[2]!.message.data, "a trade from the day's dataset, as the Binance dialect streams it").toEqual({
      e: "trade",
      E: D + HOUR_MS + 200,
      s: SYMBOL,
      t: 1,
      p: level(2_000),
      q: "1.00",
      T: D + HOUR_MS + 200,
      m: false,
      M: true,
    });
    expect(lines[0]!.at, "the snapshot at the minute's start").toBe(`${from.slice(0, 23)}0000Z`);
    expect(lines[0]!.message.data, "the book before the minute").toEqual({
      lastUpdateId: 2,
      bids: [
        [level(1_995), "3.00"],
        [level(1_990), "1.00"],
      ],
      asks: [
        [level(3_005), "4.00"],
        [level(3_010), "2.00"],
      ],
    });
    expect(lines[3]!.message.data).toMatchObject({ e: "depthUpdate", s: SYMBOL, U: 4, u: 4, b: [[level(1_998), "1.00"]], a: [[level(3_001), "0.50"]] });
  });
});
