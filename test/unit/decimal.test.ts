import Decimal from "decimal.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  add,
  compare,
  DecimalError,
  divide,
  formatDecimal,
  formatDigits,
  formatUnits,
  multiply,
  parseDecimal,
  productText,
  rescale,
  subtract,
} from "../../src/core/decimal";

// decimal.js is the independent reference: used only here, never by the service.
Decimal.set({ precision: 200, rounding: Decimal.ROUND_HALF_UP, toExpNeg: -200, toExpPos: 200 });

const decimalText = fc.tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.integer({ min: 0, max: 18 })).map(([negative, units, scale]) => {
  const digits = units.toString().padStart(scale + 1, "0");
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative && units !== 0n ? `-${text}` : text;
});

const reference = (text: string) => new Decimal(text);
/** decimal.js's ROUND_HALF_UP rounds half away from zero, as the docs say. */
const referenceFixed = (value: Decimal, scale: number) => value.toFixed(scale, Decimal.ROUND_HALF_UP);

describe("decimal: exact fixed-point on bigint", () => {
  it("parse then format round-trips every plain decimal", () => {
    fc.assert(
      fc.property(decimalText, (text) => {
        expect(formatDecimal(parseDecimal(text))).toBe(text);
      }),
    );
  });

  it("formatting at any scale rounds half away from zero like the reference", () => {
    fc.assert(
      fc.property(decimalText, fc.integer({ min: 0, max: 20 }), (text, scale) => {
        const expected = referenceFixed(reference(text), scale);
        // decimal.js writes "-0.00" for tiny negatives that round to zero; we write "0.00".
        expect(formatDecimal(parseDecimal(text), scale)).toBe(expected.replace(/^-(0\.?0*)$/, "$1"));
      }),
    );
  });

  it("add, subtract and multiply are exact", () => {
    fc.assert(
      fc.property(decimalText, decimalText, (a, b) => {
        const x = parseDecimal(a);
        const y = parseDecimal(b);
        expect(reference(formatDecimal(add(x, y))).eq(reference(a).plus(b))).toBe(true);
        expect(reference(formatDecimal(subtract(x, y))).eq(reference(a).minus(b))).toBe(true);
        expect(reference(formatDecimal(multiply(x, y))).eq(reference(a).times(b))).toBe(true);
      }),
    );
  });

  it("divide rounds half away from zero at the asked scale", () => {
    fc.assert(
      fc.property(decimalText, decimalText, fc.integer({ min: 0, max: 20 }), (a, b, scale) => {
        fc.pre(!reference(b).isZero());
        const expected = referenceFixed(reference(a).div(b), scale).replace(/^-(0\.?0*)$/, "$1");
        expect(formatDecimal(divide(parseDecimal(a), parseDecimal(b), scale))).toBe(expected);
      }),
    );
  });

  it("compare orders like the reference", () => {
    fc.assert(
      fc.property(decimalText, decimalText, (a, b) => {
        expect(compare(parseDecimal(a), parseDecimal(b))).toBe(reference(a).comparedTo(b));
      }),
    );
  });

  it("exact halves round away from zero in both directions", () => {
    expect(formatDecimal(parseDecimal("0.125"), 2)).toBe("0.13");
    expect(formatDecimal(parseDecimal("-0.125"), 2)).toBe("-0.13");
    expect(formatDecimal(parseDecimal("2.5"), 0)).toBe("3");
    expect(formatDecimal(rescale(parseDecimal("-2.5"), 0))).toBe("-3");
    expect(formatDecimal(divide(parseDecimal("1"), parseDecimal("8"), 2))).toBe("0.13");
  });

  it("refuses anything that is not plain notation", () => {
    for (const bad of ["", "1e5", "+1", ".5", "5.", "1,000", " 1", "0x10", "NaN", "--1", "1.2.3"]) {
      expect(() => parseDecimal(bad), bad).toThrow(DecimalError);
    }
    expect(() => divide(parseDecimal("1"), parseDecimal("0.00"), 2)).toThrow(DecimalError);
  });

  it("productText is multiply's product, text to text, for any plain decimals (leading zeros, signs, scale 0)", () => {
    const padded = fc.tuple(decimalText, fc.nat({ max: 3 })).map(([text, zeros]) => (text.startsWith("-") ? text : "0".repeat(zeros) + text));
    fc.assert(
      fc.property(padded, padded, (a, b) => {
        expect(productText(a, b), `${a} × ${b}`).toBe(formatDecimal(multiply(parseDecimal(a), parseDecimal(b))));
      }),
    );
  });

  it("formatDigits places non-negative units' digits as formatUnits does", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.integer({ min: 0, max: 36 }), (units, scale) => {
        expect(formatDigits(units.toString(), scale)).toBe(formatUnits(units, scale));
      }),
    );
  });
});
