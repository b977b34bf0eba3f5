import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cumulativeDepth, subtractDecimal } from "../../src/pages/client/ladder";
import { Decimal, levelsAt } from "../support/book-levels";

describe("the market page's ladder arithmetic", () => {
  it("subtracts decimal strings exactly (the spread), at the larger scale", () => {
    const decimal = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.integer({ min: 0, max: 12 }))
      .map(([units, scale]) => new Decimal(units.toString()).div(new Decimal(10).pow(scale)).toFixed(scale));
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        const scale = Math.max(a.split(".")[1]?.length ?? 0, b.split(".")[1]?.length ?? 0);
        expect(subtractDecimal(a, b)).toBe(new Decimal(a).minus(b).toFixed(scale));
      }),
    );
    expect(subtractDecimal("96187.20", "96182.4")).toBe("4.80");
  });

  it("adds up the depth from the touch outwards", () => {
    fc.assert(
      fc.property(levelsAt(3), (levels) => {
        let total = 0;
        const expected = levels.map(([price, quantity]) => [Number(price), (total += Number(quantity))]);
        expect(cumulativeDepth(levels)).toEqual(expected);
      }),
    );
    expect(
      cumulativeDepth([
        ["100.5", "1.5"],
        ["100.0", "2"],
      ]),
    ).toEqual([
      [100.5, 1.5],
      [100, 3.5],
    ]);
  });
});
