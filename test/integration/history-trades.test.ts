import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { gunzipText } from "../../src/core/encoding";
import { DAY_MS, HOUR_MS } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";

type Trade = { tradeId: number; id: string; price: string; time: number };

/** Every trade there is, walked forwards from tradeId 1 in pages of `size`. */
async function walkForwards(size: number): Promise<Trade[]> {
  const seen: Trade[] = [];
  for (let fromId = 1; ; ) {
    const { status, body } = await callJson(`/api/trades/SOLBTC?fromId=${fromId}&limit=${size}`);
    expect(status, JSON.stringify(body)).toBe(200);
    if (body.length === 0) return seen;
    seen.push(...body);
    fromId = body.at(-1).tradeId + 1;
  }
}

async function walkBackwards(size: number): Promise<Trade[]> {
  const pages: Trade[][] = [];
  for (let before = Number.MAX_SAFE_INTEGER; ; ) {
    const { body } = await callJson(`/api/trades/SOLBTC?before=${before}&limit=${size}`);
    if (body.length === 0) return pages.reverse().flat();
    pages.push(body);
    before = body[0].tradeId;
  }
}

/** Moves every due chunk to R2 now (the market also does it beside its ingest, once a minute). */
async function archiveAll(): Promise<number> {
  let moved = 0;
  for (;;) {
    const step = await runInDurableObject(await hostOf("SOLBTC"), (instance: MarketObject) => instance.archiveTrades("SOLBTC", Date.now(), 100));
    if (step === 0) return moved;
    moved += step;
  }
}

describe("the trade archive in R2 (docs/history.md#trades)", () => {
  // 1,300 trades two to three days old: thirteen chunks of 100 (the tests' chunk size) are due.
  const start = Date.now() - 3 * DAY_MS;
  const all: { id: string; time: number }[] = [];

  it("moves complete chunks older than the hot window to R2 and keeps only the newest 1,000 trades here", async () => {
    for (let batch = 0; batch < 13; batch++) {
      const trades = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        // Not in time order everywhere: every tenth trade is late by a minute.
        const time = start + n * 60_000 - (n % 10 === 9 ? 60_000 : 0);
        return { id: `a${n}`, price: `0.00${String(150_000 + n).padStart(6, "0")}`.slice(0, 9), quantity: "1.00", side: "buy" as const, time };
      });
      const result = await ingest(env, "*", { symbol: "SOLBTC", trades });
      expect(result.acceptedTrades).toBe(100);
      all.push(...trades.map(({ id, time }) => ({ id, time })));
    }
    await archiveAll();
    const listed = await env.HISTORY.list({ prefix: "archive/trades/SOLBTC/" });
    expect(listed.objects.map((o) => o.key)).toEqual(Array.from({ length: 13 }, (_, k) => `archive/trades/SOLBTC/${String(k).padStart(12, "0")}.json`));
    const kept = await runInDurableObject(
      await hostOf("SOLBTC"),
      (_instance, state) =>
        state.storage.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(json_array_length(trades)), 0) AS n FROM ${tablePrefixOf("SOLBTC")}trade_blocks`).one().n,
    );
    expect(kept, "the newest 1,000 stay for the latest-trades answer").toBe(1_000);
  });

  it("a chunk is gzipped in R2 (fails before: plain JSON, 3 to 5 times the bytes)", async () => {
    const key = "archive/trades/SOLBTC/000000000003.json";
    const object = await env.HISTORY.get(key);
    expect(object?.httpMetadata?.contentEncoding, "the chunk's encoding").toBe("gzip");
    const gzipped = new Uint8Array(await object!.arrayBuffer());
    const text = await gunzipText(new Blob([gzipped]).stream());
    expect(JSON.parse(text), "the chunk's trades").toHaveLength(100);
    expect(gzipped.byteLength, `gzipped bytes against ${text.length} as JSON`).toBeLessThan(text.length / 3);
    const page = (await callJson(`/api/trades/SOLBTC?fromId=301&limit=100`)).body;
    expect(page.map((t: Trade) => t.tradeId)[0], "the page starts in chunk 3").toBe(301);
  });

  it("pages walked forwards and backwards through R2 and SQLite give every trade once, in tradeId order", async () => {
    for (const size of [7, 100, 250, 1000]) {
      const forwards = await walkForwards(size);
      expect(
        forwards.map((t) => t.tradeId),
        `forwards by ${size}`,
      ).toEqual(Array.from({ length: 1_300 }, (_, i) => i + 1));
      expect(forwards.map((t) => t.id)).toEqual(all.map((t) => t.id));
      if (size >= 100)
        expect(
          (await walkBackwards(size)).map((t) => t.tradeId),
          `backwards by ${size}`,
        ).toEqual(forwards.map((t) => t.tradeId));
    }
  }, 60_000);

  it("time-bounded pages find archived trades: aggTrades within an hour two days back, historicalTrades from id 1", async () => {
    const from = start + 100 * 60_000;
    const to = from + HOUR_MS;
    const agg = await callJson(`/binance/api/v3/aggTrades?symbol=SOLBTC&startTime=${from}&endTime=${to}&limit=1000`);
    expect(agg.status).toBe(200);
    const expected = all
      .map((t, i) => ({ ...t, tradeId: i + 1 }))
      .filter((t) => t.time >= from && t.time <= to)
      .map((t) => t.tradeId);
    expect(agg.body.map((t: { a: number }) => t.a)).toEqual(expected);
    const native = await callJson(`/api/trades/SOLBTC?startTime=${from}&endTime=${to}&limit=1000`);
    expect(native.body.map((t: Trade) => t.tradeId)).toEqual(expected);
    const first = await callJson("/binance/api/v3/historicalTrades?symbol=SOLBTC&fromId=1&limit=5");
    expect(first.body.map((t: { id: number }) => t.id)).toEqual([1, 2, 3, 4, 5]);
  });
});
