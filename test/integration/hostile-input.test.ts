import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { call } from "../support/http";

const PATHS = ["/api/ticker/", "/api/orderbook/", "/api/trades/", "/api/klines/"];
const QUERY_NAMES = ["depth", "limit", "interval", "startTime", "endTime", "assets", "quote"];

describe("no request, however malformed, gets a 500 (docs/api.md#errors)", () => {
  it("random pairs and query values are answered 2xx or a 4xx problem", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PATHS),
        fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[A-Za-z0-9_/-]{0,40}$/), fc.constantFrom("%E0%A4%A", "%", "..", "%2F%2F", "BTC%00USDT")),
        fc.dictionary(fc.constantFrom(...QUERY_NAMES), fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String)), { maxKeys: 3 }),
        async (path, pair, query) => {
          const raw = /%/.test(pair) ? pair : encodeURIComponent(pair);
          const search = new URLSearchParams(query).toString();
          const response = await call(`${path}${raw}${search ? `?${search}` : ""}`);
          expect(response.status, `${path}${raw}?${search}`).toBeLessThan(500);
          if (response.status >= 400) {
            expect(response.headers.get("Content-Type")).toBe("application/problem+json");
            const body = (await response.json()) as { code: string; status: number };
            expect(body.status).toBe(response.status);
          } else {
            await response.arrayBuffer();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
