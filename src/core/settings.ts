/**
 * A duration setting from a Worker variable: a whole number of milliseconds (0 allowed), else
 * `fallback`. Variables are strings, and a typo must not turn a bound into NaN.
 */
export function msSetting(raw: string | undefined, fallback: number): number {
  const value = Number(raw);
  return raw !== undefined && raw !== "" && Number.isSafeInteger(value) && value >= 0 ? value : fallback;
}
