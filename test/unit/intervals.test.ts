import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bucketSizeFor,
  DAY_MS,
  formatTimeZone,
  HOUR_MS,
  KLINE_INTERVALS,
  type KlineInterval,
  MINUTE_MS,
  nextOpenTime,
  openTimeOf,
  parseTimeZone,
} from "../../src/domain/intervals";

/**
 * The reference: the calendar fields of the local time (UTC shifted by the offset), read with
 * Date's UTC getters and put back together field by field, the way a person would count.
 */
function referenceOpen(time: number, interval: KlineInterval, offset: number): number {
  const local = new Date(time + offset);
  const [y, mo, d, h, mi, s] = [
    local.getUTCFullYear(),
    local.getUTCMonth(),
    local.getUTCDate(),
    local.getUTCHours(),
    local.getUTCMinutes(),
    local.getUTCSeconds(),
  ];
  const amount = Number.parseInt(interval, 10);
  const unit = interval.slice(String(amount).length);
  let open: number;
  switch (unit) {
    case "s":
      open = Date.UTC(y, mo, d, h, mi, s);
      break;
    case "m":
      open = Date.UTC(y, mo, d, h, mi - (mi % amount));
      break;
    case "h":
      open = Date.UTC(y, mo, d, h - (h % amount));
      break;
    case "d": {
      // Days count from 1970-01-01 (3d candles are aligned to the epoch).
      const days = Math.floor(Date.UTC(y, mo, d) / DAY_MS);
      open = (days - (((days % amount) + amount) % amount)) * DAY_MS;
      break;
    }
    case "w": {
      const sinceMonday = (local.getUTCDay() + 6) % 7;
      open = Date.UTC(y, mo, d - sinceMonday);
      break;
    }
    case "M":
      open = Date.UTC(y, mo, 1);
      break;
    default:
      throw new Error(`no reference for ${interval}`);
  }
  return open - offset;
}

const times = fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2100, 0, 1) });
const intervals = fc.constantFrom(...KLINE_INTERVALS);
/** Whole quarter hours from -12:00 to +14:00, and the odd ones Binance names (05:45, -03:30). */
const offsets = fc.oneof(
  fc.integer({ min: -48, max: 56 }).map((q) => q * 15 * MINUTE_MS),
  fc.constant(0),
);

describe("interval boundaries (src/history/intervals.ts)", () => {
  it("the open time equals the calendar reference for every interval, time and offset", () => {
    fc.assert(
      fc.property(times, intervals, offsets, (time, interval, offset) => {
        expect(openTimeOf(time, interval, offset), `${interval} at ${new Date(time).toISOString()} ${formatTimeZone(offset)}`).toBe(
          referenceOpen(time, interval, offset),
        );
      }),
      { numRuns: 5_000 },
    );
  });

  it("a candle holds its time, and the next candle opens where it closes, at the next boundary", () => {
    fc.assert(
      fc.property(times, intervals, offsets, (time, interval, offset) => {
        const open = openTimeOf(time, interval, offset);
        const next = nextOpenTime(open, interval, offset);
        expect(open <= time && time < next, `${interval}: ${open} <= ${time} < ${next}`).toBe(true);
        expect(openTimeOf(next, interval, offset), "the next candle opens at its own boundary").toBe(next);
        expect(openTimeOf(next - 1, interval, offset), "the last millisecond belongs to this candle").toBe(open);
      }),
      { numRuns: 5_000 },
    );
  });

  it("weeks open on Monday 00:00 local, months on the 1st: 2024 has a 29-day February", () => {
    expect(new Date(openTimeOf(Date.UTC(2026, 10, 24, 12), "1w")).toISOString()).toBe("2026-11-23T00:00:00.000Z");
    expect(nextOpenTime(Date.UTC(2024, 1, 1), "1M") - Date.UTC(2024, 1, 1)).toBe(29 * DAY_MS);
    expect(new Date(openTimeOf(Date.UTC(2026, 0, 1, 3), "1M", -5 * HOUR_MS)).toISOString(), "-05:00: still December locally").toBe("2025-12-01T05:00:00.000Z");
  });

  it("the stored bucket a candle is built from divides every boundary of it", () => {
    fc.assert(
      fc.property(times, intervals, offsets, (time, interval, offset) => {
        const size = bucketSizeFor(interval, offset);
        const open = openTimeOf(time, interval, offset);
        expect(open % size, `${interval} ${formatTimeZone(offset)} from buckets of ${size} ms`).toBe(0);
        expect(nextOpenTime(open, interval, offset) % size).toBe(0);
      }),
      { numRuns: 2_000 },
    );
    expect(bucketSizeFor("1w"), "UTC weeks from days").toBe(DAY_MS);
    expect(bucketSizeFor("1d", 8 * HOUR_MS), "+08:00 days from hours").toBe(HOUR_MS);
    expect(bucketSizeFor("1d", 5.75 * HOUR_MS), "+05:45 days from minutes").toBe(MINUTE_MS);
  });

  it("timeZone takes Binance's forms within -12:00…+14:00 and refuses the rest", () => {
    expect([parseTimeZone("8"), parseTimeZone("+08:00"), parseTimeZone("-1:00"), parseTimeZone("05:45"), parseTimeZone("0"), parseTimeZone("-0")]).toEqual([
      8 * HOUR_MS,
      8 * HOUR_MS,
      -HOUR_MS,
      5.75 * HOUR_MS,
      0,
      0,
    ]);
    for (const bad of ["15", "-13", "+14:01", "8:60", "UTC", "", "+", "8.5", "0800"]) expect(parseTimeZone(bad), bad).toBeUndefined();
    fc.assert(
      fc.property(offsets, (offset) => {
        expect(parseTimeZone(formatTimeZone(offset))).toBe(offset);
      }),
    );
  });
});
