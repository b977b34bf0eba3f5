import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { seriesKey } from "../../src/metrics/counts";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { wideUpdate } from "../support/book-levels";
import { callJson } from "../support/http";
import { hostOf } from "../support/registry";

type Counted = { meter: { holder: { counts: { take(): { counters: Record<string, number> } } } } };

describe("a market's history reads are counted by the segment they fall in (docs/operations.md#metrics)", () => {
  it("a book in a closed segment counts closed, one in the log's open segment counts open (fails before: no such count)", async () => {
    await ensureRegistry(env);
    const symbol = "ETHUSDT";
    const market = findMarket(symbol)!;
    // 10,000 levels an update (about 170 KB logged): a batch of seven passes the segment's 1 MB and closes it (sequences 1–8).
    const update = (sequence: number, type: "snapshot" | "delta") => wideUpdate(market, sequence, type);
    expect((await ingest(env, "*", { symbol, book: [update(1, "snapshot")] })).book, "the snapshot").toBe("applied");
    expect((await ingest(env, "*", { symbol, book: Array.from({ length: 7 }, (_, i) => update(2 + i, "delta")) })).book, "the batch that closes").toBe(
      "applied",
    );
    // Two more in the open segment: the book at 9 is history, at 10 the live book.
    for (const sequence of [9, 10]) expect((await ingest(env, "*", { symbol, book: [update(sequence, "delta")] })).book, `batch ${sequence}`).toBe("applied");
    const host = await hostOf(symbol);
    const counts = () => runInDurableObject(host, (instance: MarketObject) => (instance as unknown as Counted).meter.holder.counts.take().counters);
    await counts();
    const closed = await callJson<{ sequence: number }>(`/api/orderbook/${symbol}?sequence=1&depth=5`);
    expect([closed.status, closed.body.sequence], "the book at 1, in the closed segment").toEqual([200, 1]);
    const afterClosed = await counts();
    expect(afterClosed[seriesKey("mds_history_reads_total", { segment: "closed" })], "closed-segment reads").toBe(1);
    expect(afterClosed[seriesKey("mds_history_reads_total", { segment: "open" })] ?? 0, "open-segment reads").toBe(0);
    const open = await callJson<{ sequence: number }>(`/api/orderbook/${symbol}?sequence=9&depth=5`);
    expect([open.status, open.body.sequence], "the book at 9, in the open segment").toEqual([200, 9]);
    const afterOpen = await counts();
    expect(afterOpen[seriesKey("mds_history_reads_total", { segment: "open" })], "open-segment reads").toBe(1);
    expect(afterOpen[seriesKey("mds_history_reads_total", { segment: "closed" })] ?? 0, "closed-segment reads").toBe(0);
  }, 60_000);
});
