import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PublishMessageSchema } from "../../src/publish/protocol";
import { quickBatch } from "../../src/publish/quick-batch";

// Mostly what zod takes, sometimes a near miss: each field is valid nine times in ten.
const mostly = <T, U>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<U>) => fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: invalid });
const decimal = mostly(
  fc
    .tuple(fc.boolean(), fc.nat(), fc.option(fc.stringMatching(/^\d{1,8}$/), { nil: undefined }))
    .map(([neg, whole, frac]) => `${neg ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`),
  fc.oneof(fc.constantFrom("1e5", " 1", "1.", ".5", "+1", "0x10", "1".repeat(81), "1".repeat(80), "", "１"), fc.jsonValue()),
);
const text64 = mostly(
  fc.string({ minLength: 1, maxLength: 64 }),
  fc.oneof(fc.constantFrom("", "x".repeat(65), "😀".repeat(32), "😀".repeat(33)), fc.jsonValue()),
);
const level = mostly(fc.tuple(decimal, decimal), fc.oneof(fc.array(decimal, { maxLength: 3 }), fc.jsonValue()));
const trade = mostly(
  fc.record(
    {
      id: text64,
      price: decimal,
      quantity: decimal,
      side: mostly(fc.constantFrom("buy", "sell"), fc.constantFrom("BUY", "hold", 1)),
      time: mostly(fc.nat(), fc.oneof(fc.constantFrom(-1, 1.5, 8_640_000_000_000_000, 8_640_000_000_000_001, 2 ** 53), fc.jsonValue())),
      extra: fc.jsonValue(),
    },
    { requiredKeys: ["id", "price", "quantity", "side", "time"] },
  ),
  fc.jsonValue(),
);
const update = mostly(
  fc.record(
    {
      type: mostly(fc.constantFrom("snapshot", "delta"), fc.constantFrom("full", null)),
      sequence: mostly(fc.integer({ min: 1, max: 2 ** 40 }), fc.oneof(fc.constantFrom(0, -1, 2 ** 53, 2 ** 53 - 1, 0.5), fc.jsonValue())),
      bids: mostly(fc.array(level, { maxLength: 6 }), fc.jsonValue()),
      asks: mostly(fc.array(level, { maxLength: 6 }), fc.jsonValue()),
      checksum: fc.integer(),
    },
    { requiredKeys: ["type", "sequence", "bids", "asks"] },
  ),
  fc.jsonValue(),
);
const batch = fc.record(
  {
    id: mostly(fc.oneof(text64, fc.integer()), fc.oneof(fc.double(), fc.constantFrom(2 ** 53, null, true))),
    symbol: text64,
    trades: mostly(fc.array(trade, { maxLength: 4 }), fc.jsonValue()),
    book: mostly(fc.oneof(update, fc.array(update, { minLength: 0, maxLength: 3 })), fc.jsonValue()),
    note: fc.jsonValue(),
  },
  { requiredKeys: [] },
);

describe("a channel's quick look at a batch (src/publish/quick-batch.ts)", () => {
  it("says yes only where zod's schema would, with the same batch — and no on anything else, leaving zod to name why", () => {
    let yes = 0;
    fc.assert(
      fc.property(mostly(batch, fc.jsonValue()), (value) => {
        // JSON text is what a channel parses: the same value through it (no undefined, no -0 of note).
        const input = JSON.parse(JSON.stringify(value) ?? "null");
        const quick = quickBatch(input);
        const zod = PublishMessageSchema.safeParse(input);
        if (quick) {
          yes += 1;
          expect(zod.success, `quick said yes to ${JSON.stringify(input).slice(0, 300)}, zod no`).toBe(true);
          expect(quick, "quick's batch differs from zod's").toEqual(zod.data);
        }
      }),
      { numRuns: 3000 },
    );
    // The generator reaches the yes side often enough for the property to mean something.
    expect(yes, "batches quick accepted").toBeGreaterThan(150);
  });

  it("takes every batch of the venue's shape that zod takes (the quick path is the common one)", () => {
    const valid = fc.record({
      id: fc.oneof(fc.string({ minLength: 1, maxLength: 64 }), fc.integer()),
      symbol: fc.string({ minLength: 1, maxLength: 64 }),
      trades: fc.array(
        fc.record({
          id: fc.string({ minLength: 1, maxLength: 64 }),
          price: fc.stringMatching(/^\d{1,6}\.\d{1,4}$/),
          quantity: fc.stringMatching(/^\d{1,6}$/),
          side: fc.constantFrom("buy", "sell"),
          time: fc.nat(),
        }),
        { maxLength: 3 },
      ),
      book: fc.record({
        type: fc.constantFrom("snapshot", "delta"),
        sequence: fc.integer({ min: 1 }),
        bids: fc.array(fc.tuple(fc.stringMatching(/^\d{1,6}$/), fc.stringMatching(/^0\.\d{1,3}$/)), { maxLength: 5 }),
        asks: fc.array(fc.tuple(fc.stringMatching(/^\d{1,6}$/), fc.stringMatching(/^0\.\d{1,3}$/)), { maxLength: 5 }),
      }),
    });
    fc.assert(
      fc.property(valid, (value) => {
        expect(PublishMessageSchema.safeParse(value).success, "the generator makes valid batches").toBe(true);
        expect(quickBatch(value), `quick refused ${JSON.stringify(value).slice(0, 200)}`).toEqual(PublishMessageSchema.parse(value));
      }),
      { numRuns: 500 },
    );
  });
});
