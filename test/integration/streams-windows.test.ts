import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { openTimeOf } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, type TestSocket } from "./streams-support";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const EIGHT_HOURS = 8 * HOUR;
const minuteOf = (time: number) => Math.floor(time / MINUTE) * MINUTE;

/**
 * SOLUSDT (price scale 3, quantity scale 2) trades four times: two hours ago, half an hour ago,
 * and twice in the last five minutes. Each window below is counted from these by hand.
 */
const now = Date.now();
const trades = [
  { id: "w1", price: "100.000", quantity: "1.00", side: "buy" as const, time: now - 2 * HOUR },
  { id: "w2", price: "110.000", quantity: "2.00", side: "buy" as const, time: now - 30 * MINUTE },
  { id: "w3", price: "120.000", quantity: "1.00", side: "sell" as const, time: now - 2 * MINUTE },
  { id: "w4", price: "130.000", quantity: "3.00", side: "buy" as const, time: now - MINUTE },
];
/** The last hour holds w2…w4; four hours and a day hold all four. */
const lastHour = {
  symbol: "SOLUSDT",
  openPrice: "110.000",
  highPrice: "130.000",
  lowPrice: "110.000",
  lastPrice: "130.000",
  priceChange: "20.000",
  priceChangePercent: "18.18",
  weightedAvgPrice: "121.667", // 730 / 6
  volume: "6.00",
  quoteVolume: "730.00000",
  tradeCount: 3,
};
const lastFourHours = {
  ...lastHour,
  openPrice: "100.000",
  lowPrice: "100.000",
  priceChange: "30.000",
  priceChangePercent: "30.00",
  weightedAvgPrice: "118.571", // 830 / 7
  volume: "7.00",
  quoteVolume: "830.00000",
  tradeCount: 4,
};

let ips = 0;
const nextIp = () => `198.18.130.${++ips}`;
const sockets: TestSocket[] = [];

async function subscribed(path: string): Promise<TestSocket> {
  const socket = await openSocket(path, nextIp());
  sockets.push(socket);
  return socket;
}

describe("rolling-window, average-price and +08:00 kline streams (docs/streams.md, docs/binance.md#streams)", () => {
  let native: TestSocket;
  let binance: TestSocket;

  beforeAll(async () => {
    native = await subscribed(
      "/api/ws?streams=ticker.SOLUSDT.1h,ticker.sol-usdt.4h,ticker.SOLUSDT.1d,avgPrice.SOLUSDT,tickers.1h,kline.SOLUSDT.1d@%2B08:00,kline.SOLUSDT.1w@%2B08:00,kline.SOLUSDT.4h@%2B08:00",
    );
    await until(() => native.messages.find((m) => m.result), { what: "the native ack" });
    binance = await subscribed("/binance/stream?streams=solusdt@ticker_1h/!ticker_4h@arr/solusdt@avgPrice/solusdt@kline_1d@%2B08:00");
    // Subscribed at connect: the first event can only come after the sources are joined, so a LIST proves it.
    binance.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: 1 }));
    await until(() => binance.messages.find((m) => m.id === 1), { what: "the Binance list" });
    // One batch: the market's once-a-second tick goes out at once.
    await ingest(env, "*", { symbol: "SOLUSDT", trades });
  });

  it("native names: a window after the ticker's symbol, an offset after a kline's interval (an offset that moves no boundary names the UTC stream)", async () => {
    expect(native.messages.find((m) => m.result)!.result.streams).toEqual([
      "ticker.SOLUSDT.1h",
      "ticker.SOLUSDT.4h",
      "ticker.SOLUSDT.1d",
      "avgPrice.SOLUSDT",
      "tickers.1h",
      "kline.SOLUSDT.1d@+08:00",
      "kline.SOLUSDT.1w@+08:00",
      "kline.SOLUSDT.4h",
    ]);
    const refused = await subscribed("/api/ws");
    for (const [id, name] of ["ticker.SOLUSDT.2h", "kline.SOLUSDT.1d@+09:00", "tickers.4d", "avgPrice.NOPEUSDT"].entries()) {
      refused.ws.send(JSON.stringify({ op: "subscribe", id, streams: [name] }));
      const answer = await until(() => refused.messages.find((m) => m.id === id), { what: `the answer to ${name}` });
      expect(answer.error?.code, name).toBe("UNKNOWN_STREAM");
    }
  });

  it("ticker.{SYMBOL}.{window} and tickers.{window} carry the window's statistics, opening a whole window before the current minute", async () => {
    const record = (stream: string) => until(() => native.messages.find((m) => m.stream === stream)?.data, { what: stream });
    for (const [stream, expected, size] of [
      ["ticker.SOLUSDT.1h", lastHour, HOUR],
      ["ticker.SOLUSDT.4h", lastFourHours, 4 * HOUR],
      ["ticker.SOLUSDT.1d", lastFourHours, 24 * HOUR],
    ] as const) {
      const data = await record(stream);
      expect(data, stream).toMatchObject(expected);
      expect(data.openTime, `${stream} opens a window before the minute it was made in`).toBe(minuteOf(data.closeTime) - size);
    }
    const all = await until(() => native.messages.find((m) => m.stream === "tickers.1h")?.data, { what: "tickers.1h" });
    expect(
      all.find((r: { symbol: string }) => r.symbol === "SOLUSDT"),
      "SOLUSDT in tickers.1h",
    ).toMatchObject(lastHour);
    // The same window over REST, made from the stored minutes and hours rather than the minutes in memory.
    const streamed = await record("ticker.SOLUSDT.1h");
    const rest = (await callJson(`/api/window/SOLUSDT?windowSize=1h`)).body;
    if (rest.openTime === streamed.openTime) expect({ ...rest, closeTime: 0 }, "REST's window").toEqual({ ...streamed, closeTime: 0 });
  });

  it("avgPrice.{SYMBOL} is volume-weighted over the current minute and the four before it", async () => {
    const data = await until(() => native.messages.find((m) => m.stream === "avgPrice.SOLUSDT")?.data, { what: "avgPrice.SOLUSDT" });
    // (120 × 1 + 130 × 3) / 4
    expect(data).toEqual({ symbol: "SOLUSDT", mins: 5, price: "127.500", closeTime: expect.any(Number), lastTradeTime: trades[3]!.time });
  });

  it("kline.{SYMBOL}.{interval}@+08:00 streams the candle REST gives with timeZone=+08:00", async () => {
    for (const interval of ["1d", "1w"] as const) {
      const stream = `kline.SOLUSDT.${interval}@+08:00`;
      const { closed, interval: named, ...candle } = await until(() => native.messages.find((m) => m.stream === stream)?.data, { what: stream });
      expect(named).toBe(interval);
      expect(closed).toBe(false);
      expect(candle.openTime, `${interval} opens at local midnight`).toBe(openTimeOf(trades[3]!.time, interval, EIGHT_HOURS));
      const [rest] = (await callJson(`/api/klines/SOLUSDT?interval=${interval}&timeZone=%2B08:00&limit=1`)).body;
      expect(candle, `${stream} = REST's last candle`).toEqual(rest);
    }
  });

  it("Binance's @ticker_<window>, !ticker_<window>@arr, @avgPrice and @kline_<interval>@+08:00 carry the same numbers in Binance's events", async () => {
    const frame = (stream: string) => until(() => binance.messages.find((m) => m.stream === stream)?.data, { what: stream });
    expect(await frame("solusdt@ticker_1h")).toMatchObject({
      e: "1hTicker",
      s: "SOLUSDT",
      p: "20.000",
      P: "18.18",
      o: "110.000",
      h: "130.000",
      l: "110.000",
      c: "130.000",
      w: "121.667",
      v: "6.00",
      q: "730.00000",
      F: -1,
      L: -1,
      n: 3,
    });
    const all = await frame("!ticker_4h@arr");
    expect(all.find((e: { s: string }) => e.s === "SOLUSDT")).toMatchObject({ e: "4hTicker", o: "100.000", n: 4, v: "7.00" });
    expect(await frame("solusdt@avgPrice")).toEqual({ e: "avgPrice", E: expect.any(Number), s: "SOLUSDT", i: "5m", w: "127.500", T: trades[3]!.time });
    const kline = await frame("solusdt@kline_1d@+08:00");
    const [row] = (await callJson(`/binance/api/v3/klines?symbol=SOLUSDT&interval=1d&timeZone=8&limit=1`)).body;
    expect(kline.k, "the +08:00 day as Binance's klines with timeZone=8 give it").toMatchObject({
      t: row[0],
      o: row[1],
      h: row[2],
      l: row[3],
      c: row[4],
      v: row[5],
      T: row[6],
      i: "1d",
    });
    for (const socket of sockets) socket.ws.close();
  });
});
