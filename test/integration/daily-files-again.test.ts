import { introspectWorkflow, introspectWorkflowInstance, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DAY_MS, HOUR_MS } from "../../src/domain/intervals";
import { writeDailyFiles } from "../../src/history/archive-days";
import { dailyKey, dayName } from "../../src/history/daily-files";
import { datasetKey } from "../../src/history/datasets";
import { againId } from "../../src/history/file-workflows";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { call } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { unzip } from "../support/zip";

const SYMBOL = "XRPUSDT";

describe("a day's trades files kept 30 days, then built again from the trade archive (docs/history.md#daily-files)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("an expired day asked for is built again from the archive's chunks — 404 with Retry-After meanwhile, then the same bytes — its datasets after it; a day without trades and a younger day are not (fails before: 404 for ever)", async () => {
    await ensureRegistry(env);
    const market = findMarket(SYMBOL)!;
    const now = Date.now();
    const D = Math.floor(now / DAY_MS) * DAY_MS - 40 * DAY_MS;
    const date = dayName(D);
    // 250 trades forty days ago, published then; archived to R2 by their host since.
    vi.useFakeTimers({ toFake: ["Date"], now: D + 23 * HOUR_MS });
    const trades = Array.from({ length: 250 }, (_, i) => ({
      id: `old-${i}`,
      price: `0.${5000 + i}`,
      quantity: `${1 + (i % 5)}.0`,
      side: i % 3 === 0 ? ("sell" as const) : ("buy" as const),
      time: D + i * 60_000,
    }));
    expect((await ingest(env, "*", { symbol: SYMBOL, trades })).acceptedTrades, "the day's trades").toBe(250);
    vi.useRealTimers();
    await runInDurableObject(await hostOf(SYMBOL), (object: MarketObject) => object.archiveTrades(SYMBOL));
    const [written] = await writeDailyFiles(env, D, [market], 60_000);
    expect(written, JSON.stringify(written)).toMatchObject({ trades: 250 });
    const path = (kind: "trades" | "aggTrades", day = D) => `/${dailyKey(kind, SYMBOL, day)}`;
    const first = new Uint8Array(await (await call(path("trades"))).arrayBuffer());
    const klines = await env.HISTORY.head(dailyKey("klines/1m", SYMBOL, D));
    expect(klines, "the day's klines file").not.toBeNull();

    // The day's datasets, handed on by its instance: their trades written (the book's after).
    await until(async () => (await env.HISTORY.head(datasetKey("trades", D, SYMBOL))) ?? undefined, { what: "the day's trades dataset" });

    // Thirty days on, the lifecycle rule deletes the trades files (here, by hand), and the datasets theirs.
    for (const kind of ["trades", "aggTrades"] as const) await env.HISTORY.delete([dailyKey(kind, SYMBOL, D), `${dailyKey(kind, SYMBOL, D)}.CHECKSUM`]);
    await env.HISTORY.delete(datasetKey("trades", D, SYMBOL));
    const again = await introspectWorkflowInstance(env.DAILY_FILES, againId(`day-${SYMBOL}-${date}`, now));
    const datasets = await introspectWorkflowInstance(env.DATASETS, againId(`tardis-${SYMBOL}-${date}`, now));
    for (const instance of [again, datasets]) {
      await instance.modify(async (m) => {
        await m.disableSleeps();
        await m.disableRetryDelays();
      });
    }
    const dataset = `/tardis/v1/datasets/binance/trades/${date.replaceAll("-", "/")}/${SYMBOL}.csv.gz`;
    const waiting = async (url: string, why: RegExp) => {
      const answer = await call(url);
      const { detail } = (await answer.json()) as { detail: string };
      expect([answer.status, answer.headers.get("Retry-After")], `${url} (${detail})`).toEqual([404, "60"]);
      expect(detail, url).toMatch(why);
    };
    // The trades dataset is read from the day's trades zip: asked first, it hands the day's files on, not yet itself.
    await waiting(dataset, /is being built/);
    await expect(env.DATASETS.get(againId(`tardis-${SYMBOL}-${date}`, now)), "no datasets' instance before the zip").rejects.toThrow();
    await waiting(path("trades"), /is being built .*kept 30 days, then built again from the trade archive/);
    await waiting(path("aggTrades"), /is being built/);
    await again.waitForStatus("complete");
    const rebuilt = await call(path("trades"));
    expect(rebuilt.status, "built again from the archive's chunks").toBe(200);
    expect(new Uint8Array(await rebuilt.arrayBuffer()), "the same bytes as the first time").toEqual(first);
    for (const url of [path("aggTrades"), `${path("trades")}.CHECKSUM`, `${path("aggTrades")}.CHECKSUM`]) expect((await call(url)).status, url).toBe(200);
    expect((await env.HISTORY.head(dailyKey("klines/1m", SYMBOL, D)))?.uploaded, "the klines files, kept, not written again").toEqual(klines!.uploaded);

    // The zip there, the dataset is handed on, and built from it.
    await waiting(dataset, /is being built/);
    await datasets.waitForStatus("complete");
    const served = await call(dataset);
    expect(served.status, "the trades dataset, built again").toBe(200);
    const rows = gunzipSync(new Uint8Array(await served.arrayBuffer()))
      .toString("utf8")
      .trimEnd()
      .split("\n");
    expect(rows.length, "its header and every trade of the day").toBe(251);
    expect((await unzip(first)).text.trimEnd().split("\n").length, "the trades file's rows").toBe(250);

    // A day the market did not trade has no files: 404 at once, nothing built; a younger day not written is the nightly run's.
    for (const [day, why] of [
      [D - DAY_MS, /has no file: the market did not trade that day/],
      [Math.floor(now / DAY_MS) * DAY_MS - 3 * DAY_MS, /has not been written/],
    ] as const) {
      const answer = await call(path("trades", day));
      const { detail } = (await answer.json()) as { detail: string };
      expect([answer.status, answer.headers.get("Retry-After")], `${dayName(day)} (${detail})`).toEqual([404, null]);
      expect(detail, dayName(day)).toMatch(why);
      await expect(env.DAILY_FILES.get(againId(`day-${SYMBOL}-${dayName(day)}`, now)), `no instance for ${dayName(day)}`).rejects.toThrow();
    }
    await again.dispose();
    await datasets.dispose();
  }, 120_000);

  it("a day's files written again from the same trades hand its datasets no second build; a late trade's rewrite does (fails before: a datasets' build each time)", async () => {
    await ensureRegistry(env);
    const market = findMarket("BTCUSDT")!;
    const D = Math.floor(Date.now() / DAY_MS) * DAY_MS - 3 * DAY_MS;
    await using builds = await introspectWorkflow(env.DATASETS);
    await builds.modifyAll(async (m) => {
      await m.disableSleeps();
      await m.disableRetryDelays();
    });
    const trade = (i: number) => ({ id: `same-${i}`, price: "97000.00", quantity: "0.00100", side: "buy" as const, time: D + i * 60_000 });
    expect((await ingest(env, "*", { symbol: "BTCUSDT", trades: Array.from({ length: 100 }, (_, i) => trade(i)) })).acceptedTrades).toBe(100);
    const datasetRows = async () => {
      const object = await env.HISTORY.get(datasetKey("trades", D, "BTCUSDT"));
      return gunzipSync(new Uint8Array(await object!.arrayBuffer()))
        .toString("utf8")
        .trimEnd()
        .split("\n").length;
    };
    const run = async (handed: number, rows: number, why: string) => {
      const [written] = await writeDailyFiles(env, D, [market], 60_000);
      expect(written?.pending, JSON.stringify(written)).toBeUndefined();
      const instances = await builds.get();
      expect(instances.length, why).toBe(handed);
      await instances.at(-1)!.waitForStatus("complete");
      expect(await datasetRows(), `${why}: the trades dataset's header and rows`).toBe(rows + 1);
    };
    await run(1, 100, "the day's first files hand its datasets on");
    await run(1, 100, "the same zip again: no second build");
    expect((await ingest(env, "*", { symbol: "BTCUSDT", trades: [trade(100)] })).acceptedTrades, "a late trade").toBe(1);
    await run(2, 101, "a late trade's rewrite: built again");
  }, 120_000);
});
