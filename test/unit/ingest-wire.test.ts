import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatUnits } from "../../src/core/decimal";
import type { MarketConfig } from "../../src/domain/market-config";
import type { IngestBatch } from "../../src/market/ingest-check";
import { decodeIngestBatch, decodeIngestCall, encodeIngestBatch, encodeIngestCall } from "../../src/market/ingest-wire";
import type { IngestBody } from "../../src/market/schemas";

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

  it("a host call's items as one string read back as each item's config, body and commit, in order", () => {
    const config = fc.record({
      symbol: fc.string({ minLength: 1, maxLength: 20 }),
      base: fc.string({ maxLength: 10 }),
      quote: fc.string({ maxLength: 10 }),
      priceScale: fc.nat({ max: 18 }),
      quantityScale: fc.nat({ max: 18 }),
      status: fc.constantFrom("TRADING" as const, "HALTED" as const),
      rules: fc.record({
        tickSize: fc.constant("0.01"),
        stepSize: fc.constant("0.001"),
        minQty: fc.constant("0.001"),
        maxQty: fc.constant("1000"),
        minNotional: fc.constant("1"),
      }),
      ordinal: fc.nat(),
      revision: fc.nat(),
    }) as unknown as fc.Arbitrary<MarketConfig>;
    const decimal = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.nat({ max: 18 })).map(([units, scale]) => formatUnits(units, scale));
    const body: fc.Arbitrary<IngestBody> = fc.record(
      {
        symbol: fc.string({ minLength: 1, maxLength: 20 }),
        trades: fc.array(
          fc.record({
            id: fc.string({ minLength: 1, maxLength: 64 }),
            price: decimal,
            quantity: decimal,
            side: fc.constantFrom("buy" as const, "sell" as const),
            time: fc.nat(),
          }),
          { maxLength: 4 },
        ),
        book: fc.record({
          type: fc.constantFrom("snapshot" as const, "delta" as const),
          sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
          bids: fc.array(fc.tuple(decimal, decimal), { maxLength: 6 }),
          asks: fc.array(fc.tuple(decimal, decimal), { maxLength: 6 }),
        }),
      },
      { requiredKeys: ["symbol"] },
    );
    const item = fc.record({ market: config, body, commit: fc.constantFrom("tick" as const, "now" as const) });
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 8 }), (items) => {
        const text = encodeIngestCall(items.map((i) => ({ ...i, body: JSON.stringify(i.body) })));
        expect(typeof text, "one string for the call").toBe("string");
        expect(decodeIngestCall(text), `read back from ${text.slice(0, 200)}`).toEqual(items);
      }),
      { numRuns: 200 },
    );
  });
});
