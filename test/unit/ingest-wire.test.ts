import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IngestBatch } from "../../src/market/ingest";
import { decodeIngestBatch, encodeIngestBatch } from "../../src/market/ingest-wire";

const units = fc.bigInt({ min: 0n, max: 10n ** 40n });
const batch: fc.Arbitrary<IngestBatch> = fc.record(
  {
    trades: fc.array(
      fc.record({
        id: fc.string({ minLength: 1, maxLength: 64 }),
        price: units,
        quantity: units,
        side: fc.constantFrom("buy" as const, "sell" as const),
        time: fc.nat(),
      }),
      { maxLength: 5 },
    ),
    book: fc.array(
      fc.record({
        type: fc.constantFrom("snapshot" as const, "delta" as const),
        sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        bids: fc.array(fc.tuple(units, units), { maxLength: 6 }),
        asks: fc.array(fc.tuple(units, units), { maxLength: 6 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  },
  { requiredKeys: ["trades"] },
);

describe("a checked batch's string for its host's call (src/market/ingest-wire.ts)", () => {
  it("reads back as the batch it was written from, every unit exact (ids with quotes, 40-digit units)", () => {
    fc.assert(
      fc.property(batch, (value) => {
        const text = encodeIngestBatch(value);
        expect(typeof text).toBe("string");
        expect(decodeIngestBatch(text), `read back from ${text.slice(0, 200)}`).toEqual(value);
      }),
      { numRuns: 500 },
    );
  });
});
