import DecimalJs from "decimal.js";
import fc from "fast-check";

/** decimal.js, exact for every value these tests generate (the default keeps 20 significant digits). */
export const Decimal = DecimalJs.clone({ precision: 100 });

/** A decimal string at a fixed scale, as a market writes its prices and quantities. */
export const atScale = (units: number, scale: number) => (scale === 0 ? String(units) : new Decimal(units).div(new Decimal(10).pow(scale)).toFixed(scale));

/** Up to 6 book levels `[price, quantity]`: prices at `scale` up to 400 units, quantities at scale 3 or `"0"` (remove). */
export const levelsAt = (scale: number) =>
  fc.array(
    fc.tuple(
      fc.integer({ min: 1, max: 400 }).map((u) => atScale(u, scale)),
      fc.oneof(
        fc.constant("0"),
        fc.integer({ min: 1, max: 9_999 }).map((u) => atScale(u, 3)),
      ),
    ),
    { maxLength: 6 },
  );

/**
 * A wide update: every level of both sides, 5,000 each, at one quantity per sequence (bids 1,000 +
 * sequence, asks 2,000 + sequence units), so the book at any sequence is known; about 170 KB logged.
 */
export function wideUpdate(market: { priceScale: number; quantityScale: number }, sequence: number, type: "snapshot" | "delta") {
  return {
    type,
    sequence,
    bids: Array.from({ length: 5_000 }, (_, i): [string, string] => [atScale(40_001 + i, market.priceScale), atScale(1_000 + sequence, market.quantityScale)]),
    asks: Array.from({ length: 5_000 }, (_, i): [string, string] => [atScale(50_001 + i, market.priceScale), atScale(2_000 + sequence, market.quantityScale)]),
  };
}
