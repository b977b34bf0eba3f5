import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HOUR_MS } from "../../src/history/intervals";
import { hourExpired, idHour, RECENT_ID_MS } from "../../src/writes/trade-id-minutes";

describe("how long an archived trade id is kept (src/writes/trade-id-minutes.ts)", () => {
  it("an id archived at t is kept at every moment before t + 25 h, and its hour is dropped by t + 26 h (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 42 }), fc.integer({ min: 0, max: 30 * HOUR_MS }), (archivedAt, after) => {
        const expired = hourExpired(idHour(archivedAt), archivedAt + after);
        if (after < RECENT_ID_MS) expect(expired, `${after} ms after`).toBe(false);
        if (after >= RECENT_ID_MS + HOUR_MS) expect(expired, `${after} ms after`).toBe(true);
      }),
    );
  });
});
