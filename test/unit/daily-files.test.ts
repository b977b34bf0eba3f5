import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fileIsFinal } from "../../src/history/daily-files";
import { DAY_MS, MINUTE_MS } from "../../src/history/intervals";
import { MAX_TRADE_AGE_MS } from "../../src/market/ingest";

describe("when a daily file is final (docs/history.md#daily-files)", () => {
  const day = Date.UTC(2026, 10, 1);

  it("a file written before the last late trade's run is never final, however long after it is served (before: final 8 days after the day's start)", () => {
    // The day's last millisecond is accepted until day + 8 d − 1 ms and written at the 00:05 run after.
    expect(fileIsFinal(day, day + 8 * DAY_MS - 1_000)).toBe(false);
    expect(fileIsFinal(day, day + 8 * DAY_MS + MINUTE_MS)).toBe(false);
    expect(fileIsFinal(day, day + 8 * DAY_MS + 5 * MINUTE_MS)).toBe(true);
  });

  it("a final file was written after every trade the day can still take (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: DAY_MS - 1 }), fc.integer({ min: 0, max: 30 * DAY_MS }), (tradeAt, uploadedAfter) => {
        const lastAccepted = day + tradeAt + MAX_TRADE_AGE_MS;
        if (fileIsFinal(day, day + uploadedAfter)) expect(day + uploadedAfter, `trade at +${tradeAt} ms`).toBeGreaterThan(lastAccepted);
      }),
    );
  });
});
