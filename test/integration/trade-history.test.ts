import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";

type Trade = { tradeId: number; id: string; time: number };

/** Every retained trade, oldest first, walked forwards from tradeId 1 in pages of `size`. */
async function walkForwards(symbol: string, size: number): Promise<Trade[]> {
  const seen: Trade[] = [];
  for (let fromId = 1; ; ) {
    const { status, body } = await callJson(`/api/trades/${symbol}?fromId=${fromId}&limit=${size}`);
    expect(status).toBe(200);
    if (body.length === 0) return seen;
    seen.push(...body);
    fromId = body.at(-1).tradeId + 1;
  }
}

/** The same, walked backwards from the newest with `before`. */
async function walkBackwards(symbol: string, size: number): Promise<Trade[]> {
  const pages: Trade[][] = [];
  // From the end: before the largest tradeId there can be (the default list is newest by time).
  for (let before = Number.MAX_SAFE_INTEGER; ; ) {
    const { body } = await callJson(`/api/trades/${symbol}?before=${before}&limit=${size}`);
    if (body.length === 0) return pages.reverse().flat();
    pages.push(body);
    before = body[0].tradeId;
  }
}

describe("trade history paging (docs/api.md#trade-history)", () => {
  it("pages walked forwards and backwards return every retained trade exactly once, in tradeId order (property)", async () => {
    let published = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 3_600_000 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 25 }),
        async (ages, size) => {
          const now = Date.now();
          // Times out of order on purpose: tradeId is the order applied, not the time.
          await ingest(env, "*", {
            symbol: "SOLUSDT",
            trades: ages.map((age) => ({ id: `h-${published++}`, price: "150.000", quantity: "1.00", side: "buy" as const, time: now - age })),
          });
          const forwards = await walkForwards("SOLUSDT", size);
          const ids = forwards.map((t) => t.tradeId);
          expect(ids, "tradeIds 1…n, each once").toEqual(Array.from({ length: published }, (_, i) => i + 1));
          expect(forwards.map((t) => t.id)).toEqual(Array.from({ length: published }, (_, i) => `h-${i}`));
          expect(
            (await walkBackwards("SOLUSDT", size)).map((t) => t.tradeId),
            "backwards, the same",
          ).toEqual(ids);
        },
      ),
      { numRuns: 12 },
    );
    // Its cost is the seed's: up to 480 trades walked a page of 1 both ways is about 1,000 requests
    // (1.4 s alone here, 5.7 s once in a loaded CI run), so the budget is the worst case's, not 5 s.
  }, 30_000);

  it("time bounds: the first limit from startTime, the last limit up to endTime, ascending", async () => {
    const base = Date.now() - 600_000;
    await ingest(env, "*", {
      symbol: "ETHBTC",
      trades: Array.from({ length: 10 }, (_, i) => ({ id: `tb-${i}`, price: "0.03000", quantity: "1.0000", side: "sell" as const, time: base + i * 1000 })),
    });
    const from = (await callJson(`/api/trades/ETHBTC?startTime=${base + 3000}&limit=3`)).body as Trade[];
    expect(from.map((t) => t.id)).toEqual(["tb-3", "tb-4", "tb-5"]);
    const upTo = (await callJson(`/api/trades/ETHBTC?endTime=${base + 3000}&limit=2`)).body as Trade[];
    expect(upTo.map((t) => t.id)).toEqual(["tb-2", "tb-3"]);
    const within = (await callJson(`/api/trades/ETHBTC?startTime=${base + 2000}&endTime=${base + 4000}`)).body as Trade[];
    expect(within.map((t) => t.id)).toEqual(["tb-2", "tb-3", "tb-4"]);
  });

  it("refuses fromId with before, a reversed time range, and ids that are not positive integers", async () => {
    for (const query of ["fromId=1&before=5", "startTime=10&endTime=5", "fromId=0", "before=-1", "fromId=1.5"]) {
      const { status, body } = await callJson(`/api/trades/BTCUSDT?${query}`);
      expect([status, body.code], query).toEqual([400, "VALIDATION_FAILED"]);
    }
  });
});
