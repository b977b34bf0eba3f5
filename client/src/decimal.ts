/**
 * Orders two non-negative decimal strings exactly, as the service writes prices and quantities
 * (`"97000.10"`, `"0.5"`): no float rounding, so two prices that differ in the 17th digit still
 * sort apart. Negative `a < b`, zero when equal in value (`"0.1"` and `"0.10"`), positive `a > b`.
 *
 * @example
 * compareDecimal("97000.10", "97000.1") // 0
 * compareDecimal("100000000000000000001", "100000000000000000000") // 1
 */
export function compareDecimal(a: string, b: string): number {
  const [aWhole, aFraction = ""] = a.split(".") as [string, string?];
  const [bWhole, bFraction = ""] = b.split(".") as [string, string?];
  const x = aWhole.replace(/^0+(?=\d)/, "");
  const y = bWhole.replace(/^0+(?=\d)/, "");
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  if (x !== y) return x < y ? -1 : 1;
  const width = Math.max(aFraction.length, bFraction.length);
  const f = aFraction.padEnd(width, "0");
  const g = bFraction.padEnd(width, "0");
  return f === g ? 0 : f < g ? -1 : 1;
}

/** True for `"0"`, `"0.000"` and the like: the quantity that removes a level. */
export function isZeroDecimal(value: string): boolean {
  return /^0*(\.0*)?$/.test(value);
}
