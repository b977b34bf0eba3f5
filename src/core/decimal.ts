/**
 * Exact fixed-point decimals on bigint.
 *
 * A value is `units / 10^scale`. Prices, quantities and volumes never touch binary floating
 * point: the API (docs/api.md) demands exact arithmetic on decimal strings.
 */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

/** Plain decimal notation, as the API allows it on the wire. */
export const DECIMAL_PATTERN = /^-?\d+(\.\d+)?$/;

/** More fractional digits than any market or asset uses; bounds work done on hostile input. */
const MAX_SCALE = 36;
const MAX_DIGITS = 80;

export class DecimalError extends Error {}

const pow10Cache: bigint[] = [];
function pow10(n: number): bigint {
  let cached = pow10Cache[n];
  if (cached === undefined) {
    cached = 10n ** BigInt(n);
    pow10Cache[n] = cached;
  }
  return cached;
}

/**
 * Parses a plain decimal string (`"-12.3400"`). Keeps the written scale, so `"1.50"` has
 * scale 2. Throws {@link DecimalError} on anything else (exponents, spaces, `+`, `.5`).
 */
export function parseDecimal(text: string): Decimal {
  if (text.length > MAX_DIGITS + 2 || !DECIMAL_PATTERN.test(text)) {
    throw new DecimalError(`not a plain decimal: ${JSON.stringify(text.slice(0, 40))}`);
  }
  const negative = text.startsWith("-");
  const body = negative ? text.slice(1) : text;
  const dot = body.indexOf(".");
  const whole = dot === -1 ? body : body.slice(0, dot);
  const fraction = dot === -1 ? "" : body.slice(dot + 1);
  if (fraction.length > MAX_SCALE) throw new DecimalError(`more than ${MAX_SCALE} decimals`);
  const units = BigInt(whole + fraction);
  return { units: negative ? -units : units, scale: fraction.length };
}

/** The same value at `scale` decimals, rounding half away from zero when digits are dropped. */
export function rescale(value: Decimal, scale: number): Decimal {
  if (scale === value.scale) return value;
  if (scale > value.scale) return { units: value.units * pow10(scale - value.scale), scale };
  return { units: divideRounded(value.units, pow10(value.scale - scale)), scale };
}

/** The value at `scale` if that loses nothing, else null (used for the markets' scale checks). */
export function exactAtScale(value: Decimal, scale: number): bigint | null {
  if (scale >= value.scale) return value.units * pow10(scale - value.scale);
  const divisor = pow10(value.scale - scale);
  return value.units % divisor === 0n ? value.units / divisor : null;
}

/** Formats at `scale` (default: the value's own), rounding half away from zero. */
export function formatDecimal(value: Decimal, scale: number = value.scale): string {
  return formatUnits(rescale(value, scale).units, scale);
}

/** Formats integer `units` understood at `scale` decimals: `formatUnits(150n, 2) === "1.50"`. */
export function formatUnits(units: bigint, scale: number): string {
  const negative = units < 0n;
  const text = formatDigits((negative ? -units : units).toString(), scale);
  return negative ? `-${text}` : text;
}

/** Formats the digits of non-negative units at `scale` decimals, with no bigint: `formatDigits("150", 2) === "1.50"`. */
export function formatDigits(digits: string, scale: number): string {
  if (scale === 0) return digits;
  const padded = digits.padStart(scale + 1, "0");
  return `${padded.slice(0, -scale)}.${padded.slice(-scale)}`;
}

function commonScale(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [rescale(a, scale).units, rescale(b, scale).units, scale];
}

export function add(a: Decimal, b: Decimal): Decimal {
  const [x, y, scale] = commonScale(a, b);
  return { units: x + y, scale };
}

export function subtract(a: Decimal, b: Decimal): Decimal {
  const [x, y, scale] = commonScale(a, b);
  return { units: x - y, scale };
}

/**
 * The exact product of two plain decimals as text at the sum of their scales — what
 * `formatDecimal(multiply(parseDecimal(a), parseDecimal(b)))` gives — without checking them: for
 * texts the service wrote itself (a day's files compute one a trade).
 */
export function productText(a: string, b: string): string {
  const aDot = a.indexOf(".");
  const bDot = b.indexOf(".");
  const scale = (aDot === -1 ? 0 : a.length - aDot - 1) + (bDot === -1 ? 0 : b.length - bDot - 1);
  return formatUnits(BigInt(aDot === -1 ? a : a.replace(".", "")) * BigInt(bDot === -1 ? b : b.replace(".", "")), scale);
}

/** Exact product: the scale is the sum of the scales. */
export function multiply(a: Decimal, b: Decimal): Decimal {
  return { units: a.units * b.units, scale: a.scale + b.scale };
}

/** `a / b` at `scale` decimals, rounded half away from zero. Throws on division by zero. */
export function divide(a: Decimal, b: Decimal, scale: number): Decimal {
  if (b.units === 0n) throw new DecimalError("division by zero");
  // a/b = (a.units / 10^a.scale) / (b.units / 10^b.scale); scale the numerator so the
  // integer quotient lands at `scale` decimals.
  const shift = scale + b.scale - a.scale;
  let numerator = a.units;
  let denominator = b.units;
  if (shift >= 0) numerator *= pow10(shift);
  else denominator *= pow10(-shift);
  return { units: divideRounded(numerator, denominator), scale };
}

export function compare(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const [x, y] = commonScale(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Integer division of bigints rounding half away from zero. */
export function divideRounded(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new DecimalError("division by zero");
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  let quotient = n / d;
  if ((n % d) * 2n >= d) quotient += 1n;
  return negative ? -quotient : quotient;
}
