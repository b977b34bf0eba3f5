import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { addressGate, objectCalls } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import { withFailing } from "../support/failing";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

// The suite runs with MARKET_READ_MAX_AGE_MS = 0 (every read asks the market); these tests give
// the app the production bounds, or their own, through its env.
const app = createApp();
let ipCounter = 0;

async function read(path: string, vars: Record<string, string> = {}): Promise<{ response: Response; body: any; startedAt: number }> {
  ipCounter += 1;
  const ctx = createExecutionContext();
  const startedAt = Date.now();
  const response = await app.request(
    path,
    { headers: { "CF-Connecting-IP": `192.0.2.${ipCounter % 250}` } },
    // It waits on every `waitUntil` of the request: the metrics hand their counts on at once, and
    // the Analytics Engine points are written at once, not from timers that wait out
    // METRICS_FLUSH_MS and ANALYTICS_WINDOW_MS after an answer.
    { ...env, MARKET_READ_MAX_AGE_MS: "250", MARKET_READ_STALE_IF_ERROR_MS: "5000", METRICS_FLUSH_MS: "0", ANALYTICS_WINDOW_MS: "0", ...vars },
    ctx,
  );
  const body = await response.json();
  await waitOnExecutionContext(ctx);
  return { response, body, startedAt };
}

const trade = (id: string, price: string) => ({ id, price, quantity: "1", side: "buy" as const, time: Date.now() });

describe("edge read path (docs/edge-reads.md)", () => {
  it("an ingested trade is on the public ticker within the max age, and the ticker never goes back afterwards", async () => {
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [trade("edge-1", "0.5000")] });
    await read("/api/ticker/XRPUSDT"); // a copy exists before the trade below
    await ingest(env, "*", { symbol: "XRPUSDT", trades: [trade("edge-2", "0.6000")] });
    const ingestedAt = Date.now();
    let last = 0;
    const seen = await until(
      async () => {
        const { response, body, startedAt } = await read("/api/ticker/XRPUSDT");
        const asOf = Number(response.headers.get("X-As-Of"));
        // Exact, whatever the timing: a copy is served only while younger than the max age.
        expect(asOf, "X-As-Of within the max age of the request").toBeGreaterThan(startedAt - 250);
        expect(body.closeTime, "closeTime is the moment shown").toBe(asOf);
        expect(body.closeTime, "never back in time").toBeGreaterThanOrEqual(last);
        last = body.closeTime;
        // A copy made after the ingest must show the trade.
        if (asOf >= ingestedAt) expect(body.lastPrice, `the copy as of ${asOf} shows the trade ingested at ${ingestedAt}`).toBe("0.6000");
        return body.lastPrice === "0.6000" ? { asOf, startedAt } : undefined;
      },
      { timeoutMs: 5_000, intervalMs: 10, what: "the ingested trade on the ticker" },
    );
    expect(seen.startedAt - ingestedAt, "visible within the max age (plus one request)").toBeLessThan(250 + 100);
  });

  it("answers carry the moment they show and honest cache headers", async () => {
    await ingest(env, "*", { symbol: "XRPUSDT", book: { type: "snapshot", sequence: 3, bids: [["0.4900", "5"]], asks: [["0.5100", "5"]] } });
    for (const path of [
      "/api/ticker/XRPUSDT",
      "/api/orderbook/XRPUSDT?depth=5",
      "/api/trades/XRPUSDT?limit=5",
      "/api/klines/XRPUSDT?interval=1m",
      "/api/markets",
    ]) {
      const { response } = await read(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("Cache-Control"), path).toBe("public, max-age=0, stale-if-error=5");
      expect(response.headers.get("Age"), path).toMatch(/^0$/);
      expect(Number(response.headers.get("X-As-Of")), path).toBeGreaterThan(Date.now() - 5_000);
      expect(response.headers.get("Warning"), path).toBeNull();
    }
    const { body, response } = await read("/api/orderbook/XRPUSDT?depth=5");
    expect(body.timestamp).toBe(Number(response.headers.get("X-As-Of")));
  });

  it("concurrent reads of a cold key do not stampede the market: one refresh, the others wait for it", async () => {
    await ingest(env, "*", { symbol: "ETHBTC", trades: [trade("stampede", "0.03000")] });
    const before = objectCalls.marketReads;
    const answers = await Promise.all(Array.from({ length: 20 }, () => read("/api/orderbook/ETHBTC?depth=7")));
    expect(answers.map((a) => a.response.status)).toEqual(Array(20).fill(200));
    expect(objectCalls.marketReads - before, "market reads for 20 concurrent requests of one cold key").toBeLessThanOrEqual(2);
  });

  it("steady reads refresh ahead of the max age: far fewer market calls than requests", async () => {
    await ingest(env, "*", { symbol: "ETHBTC", trades: [trade("steady", "0.03000")] });
    const before = objectCalls.marketReads;
    const startedAt = Date.now();
    for (let i = 0; i < 60; i++) expect((await read("/api/ticker/ETHBTC")).response.status).toBe(200);
    const elapsed = Date.now() - startedAt;
    // At most one refresh per half max age, plus the first.
    expect(objectCalls.marketReads - before, `market reads for 60 sequential requests over ${elapsed} ms`).toBeLessThanOrEqual(Math.ceil(elapsed / 125) + 1);
  });

  it("a failing market: reads answer from the copy with its age and a Warning, then 503 UNAVAILABLE past the stale-if-error bound", async () => {
    await ingest(env, "*", { symbol: "SOLUSDT", trades: [trade("failing", "150.00")] });
    const { body: fresh } = await read("/api/ticker/SOLUSDT");
    await withFailing(await hostOf("SOLUSDT"), "answer", async () => {
      // Max age 0: the copy is past it at once, so the market is asked, fails, and the copy answers.
      const stale = await read("/api/ticker/SOLUSDT", { MARKET_READ_MAX_AGE_MS: "0" });
      expect(stale.response.status).toBe(200);
      expect(stale.response.headers.get("Warning")).toBe('110 - "Response is Stale"');
      expect(stale.response.headers.get("Age")).toMatch(/^\d+$/);
      expect(stale.body.closeTime, "the copy's moment").toBe(fresh.closeTime);
      // Past the stale-if-error bound: a clear 503, never a 500.
      const gone = await read("/api/ticker/SOLUSDT", { MARKET_READ_MAX_AGE_MS: "0", MARKET_READ_STALE_IF_ERROR_MS: "0" });
      expect(gone.response.status).toBe(503);
      expect(gone.response.headers.get("Content-Type")).toBe("application/problem+json");
      expect(gone.body.code).toBe("UNAVAILABLE");
      expect(gone.response.headers.get("Retry-After")).toBe("1");
      // A question never answered before has no copy at all: 503 as well.
      expect((await read("/api/trades/SOLUSDT?limit=3", { MARKET_READ_MAX_AGE_MS: "0" })).body.code).toBe("UNAVAILABLE");
    });
    const healed = await read("/api/ticker/SOLUSDT", { MARKET_READ_MAX_AGE_MS: "0" });
    expect([healed.response.status, healed.response.headers.get("Warning")]).toEqual([200, null]);
  });

  const counters = async () =>
    (
      (await (await app.request("/admin/isolate", { headers: { Authorization: "Bearer test-admin-token" } }, env)).json()) as {
        objectCalls: Record<string, number>;
      }
    ).objectCalls;
  const callsOf = (before: Record<string, number>, after: Record<string, number>) =>
    (["marketReads", "guard", "gate", "gateReads"] as const).map((name) => (after[name] ?? 0) - (before[name] ?? 0));

  it("GET /admin/isolate reports the counters the bench reads: a read past the max age is one call, its address gate's, which brings the market's answer (docs/limits.md#address-gates)", async () => {
    const before = await counters();
    const { response } = await read("/api/ticker/BTCUSDC", { MARKET_READ_MAX_AGE_MS: "0" });
    expect(response.status).toBe(200);
    expect(callsOf(before, await counters()), "[market reads, guard calls, gate calls, gate calls that carried a read]").toEqual([0, 0, 1, 1]);
  });

  it("a read its copy answers is one plain call to its gate; a many-market read is one plain call to its gate and no market call", async () => {
    await read("/api/ticker/ETHUSDT"); // a copy within the max age
    let before = await counters();
    await read("/api/ticker/ETHUSDT");
    expect(callsOf(before, await counters()), "[market reads, guard calls, gate calls, gate reads] of a fresh copy").toEqual([0, 0, 1, 0]);
    before = await counters();
    const { response, body } = await read("/api/ticker?symbols=BTCUSDT,SOLUSDT", { MARKET_READ_MAX_AGE_MS: "0" });
    expect([response.status, body.length]).toEqual([200, 2]);
    expect(callsOf(before, await counters()), "[market reads, guard calls, gate calls, gate reads] of a read picked from the all-market answer").toEqual([
      0, 0, 1, 0,
    ]);
  });

  it("a many-market read is picked from the all-market answer: one venue read however many symbols, no market call (fails before: one market call per symbol)", async () => {
    const listed = ((await read("/api/markets")).body.markets as { symbol: string; status: string }[])
      .filter((m) => m.status !== "DELISTED")
      .map((m) => m.symbol);
    expect(listed.length, "markets to name").toBeGreaterThan(3);
    const asked = [...listed].reverse();
    const before = { market: objectCalls.marketReads, venue: objectCalls.venueReads };
    const { response, body } = await read(`/api/ticker?symbols=${asked.join(",")}`, { MARKET_READ_MAX_AGE_MS: "0", VENUE_READ_MAX_AGE_MS: "0" });
    expect(response.status).toBe(200);
    expect(
      body.map((r: { symbol: string }) => r.symbol),
      "the records in the order asked",
    ).toEqual(asked);
    expect(objectCalls.marketReads - before.market, "market calls for one read naming every market").toBe(0);
    expect(objectCalls.venueReads - before.venue, "all-market reads for it").toBe(1);
    // The same records as each market's own answer.
    const one = (await read(`/api/ticker/${asked[0]}`, { MARKET_READ_MAX_AGE_MS: "0" })).body;
    expect(body[0].symbol).toBe(one.symbol);
  });

  it("an address over its limit gets 429 from its gate, and the market answer its read carried is not served", async () => {
    const ip = "198.51.100.77";
    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      const response = await app.request("/api/ticker/BTCUSDT", { headers: { "CF-Connecting-IP": ip } }, env);
      statuses.push(response.status);
      const body = (await response.json()) as { code?: string; symbol?: string };
      if (response.status === 429) expect([body.code, body.symbol], `request ${i}`).toEqual(["RATE_LIMITED", undefined]);
    }
    expect(statuses, "the first 10 of the second admitted, exactly").toEqual([...Array(10).fill(200), 429, 429]);
  });

  it("an unreachable gate fails closed: 503 UNAVAILABLE, never an admission without it", async () => {
    const ip = "192.0.2.251";
    const gate = addressGate(env, `ip:${ip}`);
    await withFailing(gate, "read", () =>
      withFailing(gate, "admit", async () => {
        for (const path of ["/api/ticker/BTCUSDT", "/api/markets"]) {
          const response = await app.request(path, { headers: { "CF-Connecting-IP": ip } }, env);
          expect(response.status, path).toBe(503);
          expect(((await response.json()) as { code: string }).code).toBe("UNAVAILABLE");
          expect(response.headers.get("Retry-After")).toBe("1");
        }
      }),
    );
    expect((await app.request("/api/ticker/BTCUSDT", { headers: { "CF-Connecting-IP": ip } }, env)).status).toBe(200);
  });
});
