import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HOUR_MS } from "../../src/domain/intervals";
import { MAX_ID_CHARS, MAX_TRADES_PER_BATCH } from "../../src/market/schemas";
import { hourExpired, idBytes, idHour, PENDING_MAX_BYTES, RECENT_ID_MS } from "../../src/writes/trade-id-minutes";

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

describe("the waiting ids' bound counts bytes (src/writes/trade-id-minutes.ts)", () => {
  it("an id's counted size is at least the UTF-8 bytes its packed entry takes in the row, whatever its characters (property)", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: MAX_ID_CHARS, unit: "binary" }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (id, seq) => {
        const stored = new TextEncoder().encode(`${JSON.stringify([id, seq])},`).length;
        expect(idBytes(id), `id ${JSON.stringify(id)} takes ${stored} bytes in its row`).toBeGreaterThanOrEqual(stored);
      }),
    );
  });

  it("a full row of the longest escaped ids stays under SQLite's 2 MB value", () => {
    const id = "\u0001".repeat(MAX_ID_CHARS);
    const perBatch = MAX_TRADES_PER_BATCH * new TextEncoder().encode(`${JSON.stringify([id, Number.MAX_SAFE_INTEGER])},`).length;
    // The ids are written once the count reaches PENDING_MAX_BYTES; one more batch may arrive before.
    const count = Math.ceil(PENDING_MAX_BYTES / idBytes(id));
    expect(count * (perBatch / MAX_TRADES_PER_BATCH) + perBatch, "the row's bytes").toBeLessThan(2_000_000);
  });
});
