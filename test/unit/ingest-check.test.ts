import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProblemError } from "../../src/core/problem";
import type { MarketConfig } from "../../src/domain/market-config";
import { toIngestBatch } from "../../src/market/ingest-check";
import type { IngestBody } from "../../src/market/schemas";

/**
 * A market whose rules are coarser than its scales, so that every rule of docs/publishing.md can be
 * broken on its own: a tick of 500 units (0.05 at 4 decimals), a step of 1,000 (0.001 at 6), a
 * minimum quantity of 5 steps, a maximum of 100, a minimum notional of 1.
 */
const MARKET: MarketConfig = {
  symbol: "TESTUSDT",
  base: "TEST",
  quote: "USDT",
  priceScale: 4,
  quantityScale: 6,
  status: "TRADING",
  rules: { tickSize: "0.05", stepSize: "0.001", minQty: "0.005", maxQty: "100", minNotional: "1" },
  ordinal: 0,
  revision: 1,
};
const TICK = 500n;
const STEP = 1_000n;
const MIN_QTY = 5_000n;
const MAX_QTY = 100_000_000n;
/** At price scale + quantity scale: 1 USDT. */
const MIN_NOTIONAL = 10n ** 10n;
const DAY_MS = 86_400_000;
const NOW = Date.UTC(2026, 11, 7, 12);

/** Units as decimal text at `scale`, with `extra` more digits (a nonzero last one, so that the scale is exceeded). */
function text(units: bigint, scale: number, extra: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale) + "0".repeat(Math.max(0, extra - 1)) + (extra > 0 ? "7" : "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** A value near the rules' edges: a whole number of their unit, one unit off it, zero, negative or beyond a bound. */
const units = (unit: bigint, most: bigint) =>
  fc.oneof(
    fc.bigInt({ min: 1n, max: most / unit + 2n }).map((n) => n * unit),
    fc.bigInt({ min: 1n, max: most + 2n * unit }),
    fc.constantFrom(0n, -unit, unit - 1n, most, most + unit),
  );

const trade = fc.record({
  price: units(TICK, 200_000_000n),
  priceExtra: fc.constantFrom(0, 0, 0, 1),
  quantity: units(STEP, MAX_QTY),
  quantityExtra: fc.constantFrom(0, 0, 0, 1),
  // From beyond the 7 days a trade may be late to beyond the 5 s it may be early, edges included.
  age: fc.oneof(fc.integer({ min: -10_000, max: 8 * DAY_MS }), fc.constantFrom(-5_001, -5_000, 7 * DAY_MS, 7 * DAY_MS + 1)),
  side: fc.constantFrom("buy" as const, "sell" as const),
});

type Trade = typeof trade extends fc.Arbitrary<infer T> ? T : never;

/** The rules as docs/publishing.md states them: the paths of a trade's fields that break one. */
function brokenPaths(trades: Trade[]): Set<string> {
  const broken = new Set<string>();
  trades.forEach((t, i) => {
    const at = `trades.${i}`;
    if (-t.age > 5_000 || t.age > 7 * DAY_MS) broken.add(`${at}.time`);
    const priceOk = t.priceExtra === 0 && t.price > 0n && t.price % TICK === 0n;
    const quantityOk = t.quantityExtra === 0 && t.quantity > 0n && t.quantity % STEP === 0n && t.quantity >= MIN_QTY && t.quantity <= MAX_QTY;
    if (!priceOk) broken.add(`${at}.price`);
    if (!quantityOk) broken.add(`${at}.quantity`);
    // The notional is judged where both are readable at their scales and positive.
    if (t.priceExtra === 0 && t.quantityExtra === 0 && t.price > 0n && t.quantity > 0n && t.price * t.quantity < MIN_NOTIONAL) broken.add(`${at}.quantity`);
  });
  return broken;
}

describe("a batch's trades against its market's scales and rules (docs/publishing.md)", () => {
  it("a batch is taken exactly when no trade breaks a rule; otherwise 400 VALIDATION_FAILED names every field that does, and only those", () => {
    fc.assert(
      fc.property(fc.array(trade, { minLength: 1, maxLength: 6 }), (trades) => {
        const body: IngestBody = {
          symbol: MARKET.symbol,
          trades: trades.map((t, i) => ({
            id: `t${i}`,
            price: text(t.price, MARKET.priceScale, t.priceExtra),
            quantity: text(t.quantity, MARKET.quantityScale, t.quantityExtra),
            side: t.side,
            time: NOW - t.age,
          })),
        } as IngestBody;
        const expected = brokenPaths(trades);
        let named: Set<string>;
        try {
          const batch = toIngestBatch(MARKET, body, NOW);
          expect(
            batch.trades.map((t) => [t.price, t.quantity, t.time]),
            "taken at the units sent",
          ).toEqual(trades.map((t) => [t.price, t.quantity, NOW - t.age]));
          named = new Set();
        } catch (error) {
          if (!(error instanceof ProblemError)) throw error;
          expect(error.code, "a broken rule is the client's fault").toBe("VALIDATION_FAILED");
          expect(error.status).toBe(400);
          const errors = error.extras.errors as { path: string; message: string }[];
          for (const e of errors) expect(e.message.length, `${e.path} says why`).toBeGreaterThan(0);
          named = new Set(errors.map((e) => e.path));
        }
        expect([...named].sort(), "the fields named are those that break a rule").toEqual([...expected].sort());
      }),
      { numRuns: 500 },
    );
  });

  it("each rule's own words: early, late, off the tick, off the step, below minQty, above maxQty, below minNotional", () => {
    const one = (price: string, quantity: string, time = NOW) => {
      try {
        toIngestBatch(MARKET, { symbol: MARKET.symbol, trades: [{ id: "t", price, quantity, side: "buy", time }] } as IngestBody, NOW);
        return [];
      } catch (error) {
        return ((error as ProblemError).extras.errors as { message: string }[]).map((e) => e.message);
      }
    };
    expect(one("10.00", "1", NOW + 5_001)).toEqual(["is in the future"]);
    expect(one("10.00", "1", NOW - 7 * DAY_MS - 1)).toEqual(["is more than 7 days old"]);
    expect(one("10.01", "1")).toEqual(["is not a multiple of the tick size 0.05"]);
    expect(one("10.00", "1.0005")).toEqual(["is not a multiple of the step size 0.001"]);
    expect(one("1000.00", "0.004")).toEqual(["is below minQty 0.005"]);
    expect(one("10.00", "100.001")).toEqual(["is above maxQty 100"]);
    expect(one("10.00", "0.05")).toEqual(["price × quantity is below minNotional 1 USDT"]);
  });
});
