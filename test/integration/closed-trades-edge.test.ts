import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { objectCalls } from "../../src/core/object-ids";
import { DAY_MS } from "../../src/domain/intervals";
import { closedHistoryOf } from "../../src/history/closed-book-reads";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { type PageSource, streamAt, tradesPage } from "../../src/streams/catch-up-pages";
import { parseStreamName } from "../../src/streams/protocol";
import type { ResumeLog } from "../../src/streams/resume-log";
import type { MarketStore } from "../../src/writes/market-store";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

const SYMBOL = "ETHBTC";
/** Two days back: 2,550 trades, all archived in the tests' chunks of 100 but the last 50 (an incomplete chunk stays hot). */
const OLD = 2_550;
const ARCHIVED = 2_500;
const HOT = 40;

describe("archived trades are read where they lie (docs/history.md#trades)", () => {
  it("a catch-up's trade pages inside the archive are read by the shard from R2, with no call to the market's host, and every trade comes once, in order, up to the live one (fails before: every page was the host's, which decoded a whole chunk for it)", async () => {
    await ensureRegistry(env);
    const market = findMarket(SYMBOL)!;
    const time = Date.now() - 2 * DAY_MS;
    const trades = Array.from({ length: OLD }, (_, i) => ({ id: `ce-${i}`, price: "0.05000", quantity: "1.0000", side: "buy" as const, time: time + i }));
    for (let at = 0; at < OLD; at += 500)
      expect((await ingest(env, "*", { symbol: SYMBOL, trades: trades.slice(at, at + 500) })).acceptedTrades).toBe(Math.min(500, OLD - at));
    const host = await hostOf(SYMBOL);
    await until(
      async () =>
        runInDurableObject(host, async (instance: MarketObject) => {
          await instance.archiveTrades(SYMBOL, Date.now(), 20);
          return (instance.engine(SYMBOL) as unknown as { store: MarketStore }).store.archivedThrough() >= ARCHIVED || undefined;
        }),
      { what: "the old trades archived" },
    );
    const recent = Array.from({ length: HOT }, (_, i) => ({
      id: `ce-new-${i}`,
      price: "0.05000",
      quantity: "1.0000",
      side: "sell" as const,
      time: Date.now(),
    }));
    expect((await ingest(env, "*", { symbol: SYMBOL, trades: recent })).acceptedTrades).toBe(HOT);
    const last = OLD + HOT;

    // The shard's reads, as it calls them: its live copy's last trade is the newest.
    const counted: string[] = [];
    const source: PageSource = {
      env,
      closed: closedHistoryOf(env, (where) => counted.push(where)),
      books: new Map(),
      recent: { lastTradeId: () => last } as unknown as ResumeLog,
      baseOf: async () => {},
    };
    const stream = streamAt(parseStreamName(`trades.${SYMBOL}`)!, undefined);
    const ids: number[] = [];
    const hostCalls: { from: number | undefined; calls: number }[] = [];
    for (let pages = 0; pages < 40; pages++) {
      const calls = objectCalls.market;
      const from = stream.cursor;
      const page = await tradesPage(source, time, stream, market);
      hostCalls.push({ from, calls: objectCalls.market - calls });
      if (page.length === 0) break;
      for (const pending of page) ids.push(...JSON.parse(pending.text).data.map((t: { tradeId: number }) => t.tradeId));
      stream.cursor = page.at(-1)!.cursor;
    }
    expect(ids, "every trade once, in order, up to the live one").toEqual(Array.from({ length: last }, (_, i) => i + 1));
    // The first page is by time (the host knows where `from` falls); each page from an id inside the archive is the shard's.
    const inArchive = hostCalls.filter((p) => p.from !== undefined && p.from + 1 <= ARCHIVED);
    expect(inArchive.length, "pages that began inside the archive").toBeGreaterThan(0);
    expect(
      inArchive.filter((p) => p.calls > 0),
      "pages inside the archive that called the market's host",
    ).toEqual([]);
    expect(counted.filter((where) => where === "r2").length, "chunks read from R2 (past the first page, the host's), each once").toBe(
      (ARCHIVED - hostCalls[1]!.from!) / 100,
    );
  });
});
