/**
 * A duration setting from a Worker variable: a whole number of milliseconds (0 allowed), else
 * `fallback`. Variables are strings, and a typo must not turn a bound into NaN.
 */
export function msSetting(raw: string | undefined, fallback: number): number {
  const value = Number(raw);
  return raw !== undefined && raw !== "" && Number.isSafeInteger(value) && value >= 0 ? value : fallback;
}

/**
 * A count setting from a Worker variable: a whole number from `min` to `max`, else `fallback`.
 *
 * @example
 * intSetting(env.TRADE_ARCHIVE_CHUNK, 10, 1_000_000, 10_000);
 */
export function intSetting(raw: string | undefined, min: number, max: number, fallback: number): number {
  const value = Number(raw);
  return Number.isInteger(value) && value >= min && value <= max ? value : fallback;
}
