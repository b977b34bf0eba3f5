/**
 * Candle intervals and their boundaries (docs/history.md#intervals): Binance's sixteen, in UTC
 * or shifted by a fixed offset (`timeZone`). Pure arithmetic on Unix milliseconds, no calendar
 * library: UTC has no daylight saving, and an offset is fixed, so every boundary is exact.
 */

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
/** 1970-01-01 was a Thursday: the first Monday 00:00 UTC is four days after the epoch. */
const FIRST_MONDAY_MS = 4 * DAY_MS;

/** Every interval, finest first; `1M` is a calendar month, `1w` starts on Monday 00:00. */
export const KLINE_INTERVALS = ["1s", "1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w", "1M"] as const;

export type KlineInterval = (typeof KLINE_INTERVALS)[number];

/** The length of every interval but the calendar month (`3d` counts from the epoch, as every fixed length does). */
const FIXED_MS: Record<Exclude<KlineInterval, "1M">, number> = {
  "1s": SECOND_MS,
  "1m": MINUTE_MS,
  "3m": 3 * MINUTE_MS,
  "5m": 5 * MINUTE_MS,
  "15m": 15 * MINUTE_MS,
  "30m": 30 * MINUTE_MS,
  "1h": HOUR_MS,
  "2h": 2 * HOUR_MS,
  "4h": 4 * HOUR_MS,
  "6h": 6 * HOUR_MS,
  "8h": 8 * HOUR_MS,
  "12h": 12 * HOUR_MS,
  "1d": DAY_MS,
  "3d": 3 * DAY_MS,
  "1w": WEEK_MS,
};

export function isKlineInterval(value: string): value is KlineInterval {
  return (KLINE_INTERVALS as readonly string[]).includes(value);
}

/** The shortest an interval of this kind is (a month: 28 days). */
export function nominalMs(interval: KlineInterval): number {
  return interval === "1M" ? 28 * DAY_MS : FIXED_MS[interval];
}

const floorTo = (time: number, step: number, origin = 0) => Math.floor((time - origin) / step) * step + origin;

/**
 * The open time of the candle of `interval` that holds `time`, with boundaries shifted by
 * `offsetMs` (the `timeZone`: +08:00 is 28,800,000): a `1d` candle opens at local midnight,
 * which is 16:00 UTC the day before.
 */
export function openTimeOf(time: number, interval: KlineInterval, offsetMs = 0): number {
  const local = time + offsetMs;
  if (interval === "1M") {
    const date = new Date(local);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) - offsetMs;
  }
  if (interval === "1w") return floorTo(local, WEEK_MS, FIRST_MONDAY_MS) - offsetMs;
  return floorTo(local, FIXED_MS[interval]) - offsetMs;
}

/** The open time of the candle after the one opening at `openTime` (its close time is this − 1). */
export function nextOpenTime(openTime: number, interval: KlineInterval, offsetMs = 0): number {
  if (interval === "1M") {
    const date = new Date(openTime + offsetMs);
    return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) - offsetMs;
  }
  return openTime + FIXED_MS[interval];
}

/** The one offset the kline streams take besides UTC, as Binance's streams do (`@kline_1d@+08:00`). */
export const STREAM_TIME_ZONE = "+08:00";
export const STREAM_OFFSET_MS = 8 * HOUR_MS;

/** True when the offset moves the interval's boundaries (a 4h candle at +08:00 opens when a UTC one does). */
export function offsetMoves(interval: KlineInterval, offsetMs: number): boolean {
  if (interval === "1M" || interval === "1w") return offsetMs !== 0;
  return offsetMs % FIXED_MS[interval] !== 0;
}

/**
 * Binance's `timeZone`: hours (`8`, `-5`), or hours and minutes (`05:45`, `+08:00`, `-1:00`),
 * from -12:00 to +14:00. The offset in ms, or undefined when the text is not one.
 */
export function parseTimeZone(text: string): number | undefined {
  const match = /^([+-]?)(\d{1,2})(?::(\d{2}))?$/.exec(text);
  if (!match) return undefined;
  const hours = Number(match[2]);
  const minutes = match[3] === undefined ? 0 : Number(match[3]);
  if (minutes > 59) return undefined;
  const sign = match[1] === "-" ? -1 : 1;
  const offset = sign * (hours * HOUR_MS + minutes * MINUTE_MS);
  if (offset < -12 * HOUR_MS || offset > 14 * HOUR_MS) return undefined;
  return offset === 0 ? 0 : offset; // never -0: it would key a second copy of the same answer
}

/** The canonical text of an offset: `+08:00`, `-05:30`, or `0` for UTC (stream names and keys use it). */
export function formatTimeZone(offsetMs: number): string {
  if (offsetMs === 0) return "0";
  const sign = offsetMs < 0 ? "-" : "+";
  const minutes = Math.abs(offsetMs) / MINUTE_MS;
  return `${sign}${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`;
}

/** The stored bucket sizes candles are built from: seconds (a short window), minutes, hours and UTC days. */
export const BUCKET_SIZES = [SECOND_MS, MINUTE_MS, HOUR_MS, DAY_MS] as const;
export type BucketSize = (typeof BUCKET_SIZES)[number];

/**
 * The coarsest stored bucket a candle of `interval` at `offsetMs` is a whole number of: every
 * boundary of the candle must be a boundary of the bucket. Days serve `1d` and longer in UTC,
 * hours serve whole-hour offsets, and minutes every offset (05:45 included); seconds serve `1s`.
 */
export function bucketSizeFor(interval: KlineInterval, offsetMs = 0): BucketSize {
  if (interval === "1s") return SECOND_MS;
  const step = interval === "1M" ? DAY_MS : FIXED_MS[interval];
  for (const size of [DAY_MS, HOUR_MS] as const) if (step % size === 0 && offsetMs % size === 0) return size;
  return MINUTE_MS;
}
