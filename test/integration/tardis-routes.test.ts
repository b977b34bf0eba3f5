import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ensureRegistry } from "../../src/registry/copy";
import { call, callJson } from "../support/http";

/** The Tardis-compatible API's answers to what a client may send (docs/tardis.md): details, and a clear 4xx for anything else — never a 5xx. */
describe("the Tardis-compatible API's requests (docs/tardis.md)", () => {
  it("the exchange's details list every market and the datasets; another exchange is 404", async () => {
    await ensureRegistry(env);
    const { status, body } = await callJson("/tardis/v1/exchanges/binance");
    expect(status).toBe(200);
    expect(body.availableSymbols.map((s: { id: string }) => s.id)).toContain("btcusdt");
    expect(body.datasets.dataTypes).toEqual(["trades", "incremental_book_L2", "book_snapshot_25", "quotes"]);
    expect((await call("/tardis/v1/exchanges/bitmex")).status).toBe(404);
  });

  it("a burst over the public limit from one address waits for its window rather than being refused: 15 at once, all answered, each counted by the limit (fails when the paced limit refuses at once)", async () => {
    await ensureRegistry(env);
    const answers = await Promise.all(Array.from({ length: 15 }, () => call("/tardis/v1/exchanges/binance", { ip: "198.18.99.7" })));
    expect(
      answers.map((a) => a.status),
      "every request of the burst answered",
    ).toEqual(Array.from({ length: 15 }, () => 200));
    // Each was admitted by the limit: its window's headers, none past 10 a second.
    expect(answers.every((a) => a.headers.get("RateLimit-Limit") === "10")).toBe(true);
    expect(answers.filter((a) => a.headers.get("RateLimit-Remaining") === "0").length, "each full window's last admission").toBeGreaterThanOrEqual(1);
  });

  it("any query of the feed and any dataset path is answered 200 or a 4xx that says why (property)", async () => {
    await ensureRegistry(env);
    const channel = fc.constantFrom("trade", "depth", "depthSnapshot", "bookTicker", "aggTrade", "", "trade\u0000");
    const symbol = fc.constantFrom("btcusdt", "ETHUSDT", "nope", "", "b".repeat(30), "btc usdt");
    const filters = fc.oneof(
      fc
        .array(fc.record({ channel, symbols: fc.option(fc.array(symbol, { maxLength: 12 }), { nil: undefined }) }), { maxLength: 10 })
        .map((f) => JSON.stringify(f)),
      fc.string({ maxLength: 50 }),
    );
    const from = fc.oneof(
      fc.constantFrom("2026-12-01T00:00:00.000Z", "2020-01-01", "not a date", "", "9999-12-31T23:59:59Z"),
      fc.integer({ min: 0, max: 2e12 }).map((ms) => new Date(ms).toISOString()),
    );
    const offset = fc.oneof(fc.constantFrom("0", "1", "-1", "1e3", "99999999", ""), fc.nat(2_000_000).map(String));
    await fc.assert(
      fc.asyncProperty(from, offset, fc.option(filters, { nil: undefined }), async (f, o, q) => {
        const query = new URLSearchParams({ from: f, offset: o, ...(q === undefined ? {} : { filters: q }) });
        const response = await call(`/tardis/v1/data-feeds/binance?${query}`);
        const text = await response.text();
        expect(response.status === 200 || (response.status >= 400 && response.status < 500), `${query}: ${response.status} ${text.slice(0, 300)}`).toBe(true);
        if (response.status !== 200) expect(JSON.parse(text).detail, `${query}: a problem that says why`).toBeTruthy();
      }),
      { numRuns: 60 },
    );
    const part = fc.oneof(
      fc.constantFrom("binance", "trades", "quotes", "2026", "02", "30", "BTCUSDT.csv.gz", "x.csv.gz", "..", "%00"),
      fc.string({ maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(part, { minLength: 1, maxLength: 7 }), async (parts) => {
        const path = `/tardis/v1/datasets/${parts.map(encodeURIComponent).join("/")}`;
        const response = await call(path);
        const text = await response.text();
        expect(response.status >= 400 && response.status < 500, `${path}: ${response.status} ${text.slice(0, 300)}`).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});
