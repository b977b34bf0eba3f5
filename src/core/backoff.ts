/**
 * A back-off that doubles with each failure in a row: `firstMs` after the first, twice as long
 * after each one more, never more than `longestMs` (the exponent held where it cannot overflow).
 *
 * @example
 * doublingMs(1, 1_000, 60_000); // 1,000
 * doublingMs(3, 1_000, 60_000); // 4,000
 * doublingMs(9, 1_000, 60_000); // 60,000
 */
export function doublingMs(failures: number, firstMs: number, longestMs: number): number {
  return Math.min(longestMs, firstMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
}
