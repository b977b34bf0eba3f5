import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DAY_MS, MINUTE_MS } from "../../src/domain/intervals";
import type { MarketConfig } from "../../src/domain/market-config";
import { wireTrade } from "../../src/domain/wire-trade";
import { fileIsFinal, packedWireTrade } from "../../src/history/daily-files";
import { MAX_TRADE_AGE_MS } from "../../src/market/ingest-check";
import { blockPieces, pack, unpack } from "../../src/writes/trade-blocks";

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

const storedTrade = fc.record({
  // Ids as publishers may send them, with the characters a block's cuts must not be fooled by.
  id: fc.oneof(fc.string({ minLength: 1, maxLength: 64 }), fc.constantFrom("],[", 'x],["', '1],["', "\\", '"', '],["', "é],[")),
  seq: fc.integer({ min: 1, max: 2 ** 40 }),
  price: fc.bigInt({ min: 1n, max: 10n ** 30n }),
  quantity: fc.bigInt({ min: 1n, max: 10n ** 30n }),
  side: fc.constantFrom("buy" as const, "sell" as const),
  time: fc.nat(),
});

describe("a day's files read a host's blocks without bigints, a piece at a time (src/history/daily-files.ts, src/writes/trade-blocks.ts)", () => {
  it("packedWireTrade is wireTrade of the unpacked trade, at any scales", () => {
    fc.assert(
      fc.property(storedTrade, fc.integer({ min: 0, max: 18 }), fc.integer({ min: 0, max: 18 }), (trade, priceScale, quantityScale) => {
        const market = { priceScale, quantityScale } as MarketConfig;
        const row = pack(trade);
        expect(packedWireTrade(market, row)).toEqual(wireTrade(market, unpack(row)));
      }),
    );
  });

  it("a block's pieces are its trades, in order, whatever the piece size and ids (an id may hold ],[ and quotes)", () => {
    fc.assert(
      fc.property(fc.array(storedTrade, { maxLength: 30 }), fc.integer({ min: 1, max: 400 }), (trades, bytes) => {
        const text = JSON.stringify(trades.map(pack));
        const pieces = [...blockPieces(text, bytes)];
        expect(pieces.flat(), `pieces of ${bytes} bytes`).toEqual(JSON.parse(text));
        // Small pieces stay small: a piece is one cut past its size at most (a trade here is under 300 bytes).
        for (const piece of pieces.slice(0, -1)) expect(JSON.stringify(piece).length).toBeLessThan(bytes + 600);
      }),
      { numRuns: 500 },
    );
  });
});
