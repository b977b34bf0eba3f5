import { describe, expect, it } from "vitest";
import { newAccount } from "../support/accounts";
import { ADMIN } from "../support/gateways";
import { callJson } from "../support/http";

const json = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { "Content-Type": "application/json", ...headers },
  body: JSON.stringify(body),
});
const rules = { tickSize: "0.01", stepSize: "0.01", minQty: "0.01", maxQty: "1000", minNotional: "1" };
const V3 = "/binance/api/v3";
const now = Date.now();

/**
 * Bad input that no other test sent (found by istanbul over the unit and workers projects): each is
 * answered with its documented 4xx and code — and, for a field, the field's path — never a 5xx
 * (docs/api.md#errors, docs/binance.md#errors).
 */
const CASES: {
  what: string;
  path: string;
  init?: (cookie: string) => RequestInit;
  /** Sent with a signed-in account's session cookie. */
  signedIn?: true;
  status: number;
  code: string | number;
  field?: string;
}[] = [
  {
    what: "an account key that expires in the past",
    path: "/account/api-keys",
    signedIn: true,
    init: (cookie) => json("POST", { label: "old", permissions: ["read"], allowCidrs: [], expiresAt: now - 60_000 }, { Cookie: cookie }),
    status: 400,
    code: "VALIDATION_FAILED",
    field: "body.expiresAt",
  },
  {
    what: "a password of 129 characters",
    path: "/account/signup",
    init: () => json("POST", { email: `long-${crypto.randomUUID().slice(0, 8)}@example.com`, password: "p".repeat(129) }),
    status: 400,
    code: "VALIDATION_FAILED",
  },
  {
    what: "a publishing key for a market that is not listed",
    path: "/admin/publish-keys",
    init: () => json("POST", { label: "feed", markets: ["BTCUSDT", "NOPEUSDT"], allowIps: [], expiresAt: null }, ADMIN),
    status: 400,
    code: "VALIDATION_FAILED",
    field: "body.markets.1",
  },
  {
    what: "a market whose minQty is below its stepSize",
    path: "/admin/markets",
    init: () => json("POST", { base: "ETH", quote: "USDC", ...rules, minQty: "0.001" }, ADMIN),
    status: 400,
    code: "VALIDATION_FAILED",
    field: "body.minQty",
  },
  {
    what: "a market whose minQty is not a whole number of steps",
    path: "/admin/markets",
    init: () => json("POST", { base: "ETH", quote: "USDC", ...rules, minQty: "0.015" }, ADMIN),
    status: 400,
    code: "VALIDATION_FAILED",
    field: "body.minQty",
  },
  {
    what: "a kline import in neither JSON nor CSV",
    path: "/admin/markets/BTCUSDT/history/klines",
    init: () => ({ method: "POST", headers: { ...ADMIN, "Content-Type": "application/xml" }, body: "<rows/>" }),
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    what: "a kline import of an empty CSV",
    path: "/admin/markets/BTCUSDT/history/klines",
    init: () => ({ method: "POST", headers: { ...ADMIN, "Content-Type": "text/csv" }, body: "" }),
    status: 400,
    code: "VALIDATION_FAILED",
    field: "rows",
  },
  {
    what: "a list of 101 symbols",
    path: `/api/ticker?symbols=${Array.from({ length: 101 }, (_, i) => `S${i}USDT`).join(",")}`,
    status: 400,
    code: "VALIDATION_FAILED",
  },
  { what: "a replay asked without a WebSocket", path: "/api/replay?streams=book.BTCUSDT&from=1&to=2", status: 400, code: "VALIDATION_FAILED" },
  {
    what: "a replay of another kind of stream",
    path: "/api/replay?streams=ticker.BTCUSDT&from=1&to=2",
    init: () => ({ headers: { Upgrade: "websocket" } }),
    status: 400,
    code: "VALIDATION_FAILED",
  },
  {
    what: "a replay of eleven streams",
    path: `/api/replay?streams=${Array.from({ length: 11 }, (_, i) => `book.S${i}USDT`).join(",")}&from=1&to=2`,
    init: () => ({ headers: { Upgrade: "websocket" } }),
    status: 400,
    code: "VALIDATION_FAILED",
  },
  { what: "Binance aggTrades from after its end", path: `${V3}/aggTrades?symbol=BTCUSDT&startTime=2000&endTime=1000`, status: 400, code: -1128 },
  { what: "Binance klines from after their end", path: `${V3}/klines?symbol=BTCUSDT&interval=1m&startTime=2000&endTime=1000`, status: 400, code: -1128 },
  { what: "Binance depth of limit 0", path: `${V3}/depth?symbol=BTCUSDT&limit=0`, status: 400, code: -1100 },
  { what: "Binance symbols as an empty list", path: `${V3}/ticker/price?symbols=${encodeURIComponent("[]")}`, status: 400, code: -1102 },
  { what: "Binance symbols past 32 KiB of text", path: `${V3}/ticker/price?symbols=${"x".repeat(33 * 1024)}`, status: 400, code: -1130 },
];

describe("bad input no other test sent: its documented 4xx, never a 5xx", () => {
  it.each(CASES)("$what: $status $code", async ({ path, init, signedIn, status, code, field }) => {
    const cookie = signedIn ? (await newAccount()).cookie : "";
    const { status: got, body } = await callJson<{ code: string | number; errors?: { path: string }[] }>(path, init?.(cookie));
    expect([got, body.code], JSON.stringify(body).slice(0, 300)).toEqual([status, code]);
    if (field)
      expect(
        body.errors?.map((e) => e.path),
        "the field named",
      ).toContain(field);
  });
});
