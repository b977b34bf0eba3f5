import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { nextOpenTime, openTimeOf } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openSocket } from "./streams-support";

const MINUTE = 60_000;
const trade = (id: string, price: string, time: number) => ({ id, price, quantity: "10.0", side: "buy" as const, time });
type Candle = { openTime: number; closeTime: number; close: string; tradeCount: number; interval?: string; closed?: boolean };

describe("kline streams (docs/streams.md)", () => {
  it("REST klines plus kline.{SYMBOL}.1m give every candle exactly once across a minute boundary, each closed once", async () => {
    const s = await openSocket("/api/ws?streams=kline.xrp-usdt.1m", "192.0.2.120");
    expect(await until(() => s.messages.find((m) => m.id === null && m.result))).toEqual({ id: null, result: { streams: ["kline.XRPUSDT.1m"] } });
    const start = Math.floor(Date.now() / MINUTE) * MINUTE - 3 * MINUTE;
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [trade("k1", "0.5000", start + 1_000)] });
    // The client's REST read falls between the two minutes' trades.
    const before = (await callJson(`/api/klines/XRPUSDT?interval=1m&startTime=${start}`)).body as Candle[];
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [trade("k2", "0.6000", start + MINUTE + 1_000), trade("k3", "0.6100", start + MINUTE + 2_000)] });
    await runDurableObjectAlarm(await hostOf("XRPUSDT")); // the held second's publication, without waiting for it
    const streamed = await until(
      () => {
        const candles = s.messages.filter((m) => m.stream === "kline.XRPUSDT.1m").map((m) => m.data as Candle);
        return candles.some((c) => c.openTime === start + MINUTE && c.tradeCount === 2) ? candles : undefined;
      },
      { what: "the second minute's candle with both trades" },
    );
    // Merged by openTime, REST then stream, the client holds exactly what REST has now.
    const merged = new Map(before.map((c) => [c.openTime, c]));
    for (const { interval, closed, ...candle } of streamed) {
      expect(interval).toBe("1m");
      expect(closed, `closed ⇔ the interval has ended (${candle.openTime})`).toBe(Date.now() > candle.closeTime);
      merged.set(candle.openTime, candle);
    }
    const after = (await callJson(`/api/klines/XRPUSDT?interval=1m&startTime=${start}`)).body as Candle[];
    expect([...merged.values()].sort((a, b) => a.openTime - b.openTime)).toEqual(after);
    expect(after.map((c) => c.openTime)).toEqual([start, start + MINUTE]);
    for (const openTime of [start, start + MINUTE]) {
      expect(
        streamed.filter((c) => c.openTime === openTime && c.closed),
        `closed once: ${openTime}`,
      ).toHaveLength(1);
    }
    s.ws.close();
  });

  it("the current candle streams open (closed: false) on every interval a client asks for, at its own boundaries", async () => {
    const intervals = ["1s", "5m", "1h", "3d", "1w", "1M"] as const;
    const s = await openSocket(`/api/ws?streams=${intervals.map((i) => `kline.SOLBTC.${i}`).join(",")}`, "192.0.2.121");
    await until(() => s.messages.find((m) => m.result));
    const time = Date.now();
    await ingest(env, "*", { symbol: "SOLBTC", trades: [trade("now-1", "0.0015000", time)].map((t) => ({ ...t, quantity: "1.00" })) });
    for (const interval of intervals) {
      const candle = await until(() => s.messages.find((m) => m.stream === `kline.SOLBTC.${interval}`)?.data, { what: `the ${interval} candle` });
      expect(candle, interval).toMatchObject({ interval, close: "0.0015000", tradeCount: 1, openTime: openTimeOf(time, interval) });
      expect(candle.closeTime, interval).toBe(nextOpenTime(candle.openTime, interval) - 1);
      // Closed only once its interval ended; open when sent may have ended since (a second does soon).
      if (candle.closed) expect(Date.now(), `${interval} closed`).toBeGreaterThan(candle.closeTime);
    }
    s.ws.close();
  });

  it("kline stream names: every REST interval, any symbol spelling; other intervals are unknown", async () => {
    const s = await openSocket("/api/ws", "192.0.2.122");
    s.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["kline.btc_usdt.1d", "kline.BTCUSDT.4h"] }));
    expect(await until(() => s.messages.find((m) => m.id === 1))).toEqual({ id: 1, result: { streams: ["kline.BTCUSDT.1d", "kline.BTCUSDT.4h"] } });
    s.ws.send(JSON.stringify({ op: "subscribe", id: 2, streams: ["kline.BTCUSDT.2m"] }));
    s.ws.send(JSON.stringify({ op: "subscribe", id: 3, streams: ["kline.BTCUSDT.1M", "kline.BTCUSDT.3m"] }));
    expect(await until(() => s.messages.find((m) => m.id === 3))).toEqual({
      id: 3,
      result: { streams: ["kline.BTCUSDT.1d", "kline.BTCUSDT.4h", "kline.BTCUSDT.1M", "kline.BTCUSDT.3m"] },
    });
    expect((await until(() => s.messages.find((m) => m.id === 2))).error.code).toBe("UNKNOWN_STREAM");
    s.ws.close();
  });
});
