import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { formatUnits } from "../../src/core/decimal";
import { DAY_MS, MINUTE_MS, openTimeOf } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import { ADMIN } from "../support/gateways";
import { callJson } from "../support/http";

type Row = [number, string, string, string, string, string, number, string, number, string, string, string];

/**
 * Minutes of BTCUSDC (prices at 2 decimals, quantities at 5) from `start`, a price walk that
 * depends on `seed`: every number exact at the market's scales, as a Binance file's would be.
 */
function minuteRows(start: number, count: number, seed = 1): Row[] {
  return Array.from({ length: count }, (_, i) => {
    const openTime = start + i * MINUTE_MS;
    const base = 50_000_00n + BigInt(((i * 7919 + seed * 104_729) % 200_001) - 100_000); // cents
    const [open, close] = [base, base + BigInt((i % 11) - 5)];
    const high = (open > close ? open : close) + 3n;
    const low = (open < close ? open : close) - 2n;
    const volume = BigInt(1_000 + ((i * 31 + seed) % 50_000)); // 0.01000 … BTC
    const quote = volume * close; // at 2 + 5 decimals: exact
    const buy = volume / 3n;
    const p = (u: bigint) => formatUnits(u, 2);
    const q = (u: bigint) => formatUnits(u, 5);
    return [
      openTime,
      p(open),
      p(high),
      p(low),
      p(close),
      q(volume),
      openTime + MINUTE_MS - 1,
      formatUnits(quote, 7),
      1 + (i % 9),
      q(buy),
      formatUnits(buy * close, 7),
      "0",
    ];
  });
}

async function importRows(body: unknown, contentType = "application/json") {
  return callJson("/admin/markets/BTCUSDC/history/klines", {
    method: "POST",
    headers: { ...ADMIN, "Content-Type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** The day candle a set of rows makes, summed one by one. */
function dayOf(rows: Row[]) {
  const units = (s: string) => BigInt(s.replace(".", ""));
  return {
    open: rows[0]![1],
    high: formatUnits(
      rows.reduce((m, r) => (units(r[2]) > m ? units(r[2]) : m), 0n),
      2,
    ),
    low: formatUnits(
      rows.reduce((m, r) => (units(r[3]) < m ? units(r[3]) : m), units(rows[0]![3])),
      2,
    ),
    close: rows.at(-1)![4],
    volume: formatUnits(
      rows.reduce((n, r) => n + units(r[5]), 0n),
      5,
    ),
    quoteVolume: formatUnits(
      rows.reduce((n, r) => n + units(r[7]), 0n),
      7,
    ),
    tradeCount: rows.reduce((n, r) => n + r[8], 0),
  };
}

const YEAR_AGO = openTimeOf(Date.now() - 400 * DAY_MS, "1d");

describe("importing a market's past (docs/history.md#import)", () => {
  it("imports 10,000 minutes in one request; days, weeks and months are built from them exactly", async () => {
    const rows = minuteRows(YEAR_AGO, 10_000);
    const { status, body } = await importRows({ interval: "1m", rows });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toEqual({ symbol: "BTCUSDC", interval: "1m", imported: 10_000, replaced: 0, skipped: 0, from: YEAR_AGO, to: YEAR_AGO + 9_999 * MINUTE_MS });
    const days = (await callJson(`/api/klines/BTCUSDC?interval=1d&startTime=${YEAR_AGO}&limit=3`)).body;
    for (let d = 0; d < 3; d++) {
      const start = YEAR_AGO + d * DAY_MS;
      expect(days[d], `day ${d}`).toMatchObject({ openTime: start, ...dayOf(rows.filter((r) => r[0] >= start && r[0] < start + DAY_MS)) });
    }
    const minutes = (await callJson(`/api/klines/BTCUSDC?interval=1m&startTime=${YEAR_AGO}&limit=2`)).body;
    expect(minutes[1]).toMatchObject({ openTime: rows[1]![0], open: rows[1]![1], close: rows[1]![4], volume: rows[1]![5], tradeCount: rows[1]![8] });
    const week = (await callJson(`/api/klines/BTCUSDC?interval=1w&startTime=${YEAR_AGO}&limit=1`)).body[0];
    const weekStart = openTimeOf(YEAR_AGO, "1w");
    expect(week, "the week holding the first minute").toMatchObject({
      openTime: weekStart,
      ...dayOf(rows.filter((r) => r[0] < weekStart + 7 * DAY_MS)),
    });
  });

  it("re-importing a minute replaces it, and the same rows twice give the same candles", async () => {
    const start = YEAR_AGO + 20 * DAY_MS;
    const first = minuteRows(start, 1_440, 2);
    expect((await importRows({ interval: "1m", rows: first })).body.replaced).toBe(0);
    const day = async () => (await callJson(`/api/klines/BTCUSDC?interval=1d&startTime=${start}&limit=1`)).body[0];
    const once = await day();
    expect((await importRows({ interval: "1m", rows: first })).body).toMatchObject({ imported: 1_440, replaced: 1_440 });
    expect(await day(), "the same rows again").toEqual(once);
    const second = minuteRows(start, 1_440, 3);
    expect((await importRows({ interval: "1m", rows: second })).body.replaced).toBe(1_440);
    expect(await day(), "replaced").toMatchObject({ openTime: start, ...dayOf(second) });
  });

  it("the first bad row refuses the whole request with 400 naming it; nothing is written", async () => {
    const start = YEAR_AGO + 40 * DAY_MS;
    const rows = minuteRows(start, 100);
    const cases: [string, (r: Row[]) => unknown[], string][] = [
      ["a price finer than the market's scale", (r) => r.map((row, i) => (i === 5 ? [row[0], "50000.001", ...row.slice(2)] : row)), "rows.5.1"],
      ["a high below the close", (r) => r.map((row, i) => (i === 7 ? [...row.slice(0, 2), "1.00", ...row.slice(3)] : row)), "rows.7.2"],
      ["a close time that is not the minute's end", (r) => r.map((row, i) => (i === 9 ? [...row.slice(0, 6), row[6] + 1, ...row.slice(7)] : row)), "rows.9.6"],
      ["a minute given twice", (r) => [...r.slice(0, 50), r[3]!, ...r.slice(50)], "rows.50.0"],
      ["a row of 10 fields", (r) => r.map((row, i) => (i === 2 ? row.slice(0, 10) : row)), "rows.2"],
      [
        "a minute in the future",
        (r) => r.map((row, i) => (i === 1 ? [Date.now() + 3_600_000 - ((Date.now() + 3_600_000) % MINUTE_MS), ...row.slice(1)] : row)),
        "rows.1.0",
      ],
    ];
    for (const [what, spoil, path] of cases) {
      const { status, body } = await importRows({ interval: "1m", rows: spoil(rows) });
      expect([status, body.code, body.errors?.[0]?.path], `${what}: ${JSON.stringify(body)}`).toEqual([400, "VALIDATION_FAILED", path]);
    }
    const written = (await callJson(`/api/klines/BTCUSDC?interval=1m&startTime=${start}&endTime=${start + 100 * MINUTE_MS}`)).body;
    expect(written, "nothing of the refused requests").toEqual([]);
    expect((await importRows({ interval: "5m", rows })).status, "only 1m rows").toBe(400);
    expect((await importRows("{}", "text/plain")).status, "neither JSON nor CSV").toBe(415);
    const tooLarge = await importRows(`{"interval":"1m","rows":[],"pad":"${"x".repeat(8 * 1024 * 1024)}"}`);
    expect([tooLarge.status, tooLarge.body.code], "a body past 8 MiB is refused before it is read").toEqual([413, "PAYLOAD_TOO_LARGE"]);
    const anonymous = await callJson("/admin/markets/BTCUSDC/history/klines", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    expect(anonymous.status, "the operator's only").toBe(401);
  });

  it("a minute that holds live trades is 409 LIVE_MINUTE naming it, and nothing of the request is imported", async () => {
    const live = openTimeOf(Date.now() - 2 * DAY_MS, "1m");
    await ingest(env, "*", { symbol: "BTCUSDC", trades: [{ id: "live-1", price: "61000.00", quantity: "0.10000", side: "buy", time: live + 5_000 }] });
    const rows = minuteRows(live - 10 * MINUTE_MS, 20, 4);
    const { status, body } = await importRows({ interval: "1m", rows });
    expect([status, body.code, body.errors?.[0]?.path], JSON.stringify(body)).toEqual([409, "LIVE_MINUTE", "rows.10"]);
    const around = (await callJson(`/api/klines/BTCUSDC?interval=1m&startTime=${live - 10 * MINUTE_MS}&endTime=${live + 10 * MINUTE_MS}`)).body;
    expect(around.map((c: { openTime: number; close: string }) => [c.openTime, c.close])).toEqual([[live, "61000.00"]]);
    // Beside the live minute, imports go in, and the rolling windows count them like live ones.
    const before = (await callJson("/api/window/BTCUSDC?windowSize=7d")).body.tradeCount;
    const beside = rows.filter((r) => r[0] !== live);
    expect((await importRows({ interval: "1m", rows: beside })).status).toBe(200);
    const after = (await callJson("/api/window/BTCUSDC?windowSize=7d")).body.tradeCount;
    expect(after - before, "the imported minutes' trades").toBe(beside.reduce((n, r) => n + r[8], 0));
  });

  it("takes Binance's public-data CSV, header or not, times in ms or µs, and skips rows without trades", async () => {
    const start = YEAR_AGO + 60 * DAY_MS;
    const rows = minuteRows(start, 60, 5);
    const csv = [
      "open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore",
      ...rows.map((r, i) => (i % 2 === 0 ? r : [r[0] * 1000, ...r.slice(1, 6), r[6] * 1000 + 999, ...r.slice(7)]).join(",")),
      // A flat filler without trades, as Binance writes a quiet minute.
      [start + 60 * MINUTE_MS, "1.00", "1.00", "1.00", "1.00", "0.00000", start + 61 * MINUTE_MS - 1, "0.0000000", 0, "0.00000", "0.0000000", "0"].join(","),
    ].join("\n");
    const { status, body } = await importRows(csv, "text/csv");
    expect([status, body.imported, body.skipped], JSON.stringify(body)).toEqual([200, 60, 1]);
    const hour = (await callJson(`/api/klines/BTCUSDC?interval=1h&startTime=${start}&endTime=${start + 2 * 3_600_000}`)).body;
    expect(hour, JSON.stringify(hour)).toHaveLength(1);
    expect(hour[0]).toMatchObject({ openTime: start, ...dayOf(rows) });
  });
});
