import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { HOUR_MS, MINUTE_MS } from "../../src/domain/intervals";
import { ingest } from "../../src/market/ingest";
import { closeDelay } from "../../src/market/market-book-history";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { atScale } from "../support/book-levels";
import { hostOf } from "../support/registry";

type Kept = { bookHistory: { kept: { first(): { baseSeq: number; lastSeq: number } | undefined } } };

describe("staggered hour closes (docs/history.md#staggered-closes)", () => {
  it("the segment holding an hour's end is closed by the market's first commit past its close delay after the hour, not by the hour's first commit (fails before: the hour's first commit closed every market's)", async () => {
    await ensureRegistry(env);
    const symbol = "XRPUSDT";
    const market = findMarket(symbol)!;
    const delay = closeDelay(symbol);
    expect(delay, "this market's delay leaves room before it").toBeGreaterThan(2_000);
    const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 3 * HOUR_MS;
    const update = (sequence: number) => ({
      type: sequence === 1 ? ("snapshot" as const) : ("delta" as const),
      sequence,
      bids: [[atScale(1_000 + sequence, market.priceScale), atScale(1, market.quantityScale)] as [string, string]],
      asks: [[atScale(9_000 + sequence, market.priceScale), atScale(1, market.quantityScale)] as [string, string]],
    });
    const host = await hostOf(symbol);
    const closed = () => runInDurableObject(host, (object: MarketObject) => (object.engine(symbol) as unknown as Kept).bookHistory.kept.first());
    vi.useFakeTimers({ toFake: ["Date"], now: hour + 10 * MINUTE_MS });
    try {
      expect((await ingest(env, "*", { symbol, book: [update(1)] })).book, "the hour's batch").toBe("applied");
      vi.setSystemTime(hour + HOUR_MS + 1_000);
      expect((await ingest(env, "*", { symbol, book: [update(2)] })).book, "the next hour's first batch").toBe("applied");
      expect(await closed(), "no segment closed by the next hour's first commit").toBeUndefined();
      vi.setSystemTime(hour + HOUR_MS + delay);
      expect((await ingest(env, "*", { symbol, book: [update(3)] })).book, "a batch at the market's close delay").toBe("applied");
      expect((await closed())?.baseSeq, "the segment holding the hour's end closed").toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
