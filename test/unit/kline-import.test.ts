import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatUnits } from "../../src/core/decimal";
import { ProblemError } from "../../src/core/problem";
import type { MarketConfig } from "../../src/domain/market-config";
import { csvRows, importedMinutes } from "../../src/history/kline-import";

const market = { symbol: "BTCUSDT", priceScale: 2, quantityScale: 5 } as MarketConfig;
const NOW = Date.UTC(2026, 10, 24);

/** A valid row from integer parts: every field exact at the market's scales. */
const row = fc
  .record({
    minute: fc.integer({ min: 0, max: 20_000_000 }),
    prices: fc.array(fc.bigInt({ min: 1n, max: 10n ** 9n }), { minLength: 4, maxLength: 4 }),
    volume: fc.bigInt({ min: 1n, max: 10n ** 9n }),
    share: fc.integer({ min: 0, max: 100 }),
    count: fc.integer({ min: 1, max: 10_000 }),
  })
  .map(({ minute, prices, volume, share, count }) => {
    const [a, b, c, d] = prices as [bigint, bigint, bigint, bigint];
    const sorted = [a, b, c, d].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const [low, open, close, high] = [sorted[0]!, b, c, sorted[3]!];
    const openTime = minute * 60_000;
    const buy = (volume * BigInt(share)) / 100n;
    return [
      openTime,
      formatUnits(open, 2),
      formatUnits(high, 2),
      formatUnits(low, 2),
      formatUnits(close, 2),
      formatUnits(volume, 5),
      openTime + 59_999,
      formatUnits(volume * close, 7),
      count,
      formatUnits(buy, 5),
      formatUnits(buy * close, 7),
      "0",
    ];
  });

const refusal = (rows: unknown[]) => {
  try {
    importedMinutes(rows, market, NOW);
  } catch (error) {
    if (error instanceof ProblemError) return error.extras.errors?.[0]?.path;
    throw error;
  }
  return undefined;
};

describe("kline import rows (src/history/kline-import.ts)", () => {
  it("valid rows become minute buckets with exactly their numbers, ascending, whatever their order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(row, { selector: (r) => r[0], minLength: 1, maxLength: 30 }), (rows) => {
        const { minutes, skipped } = importedMinutes(rows, market, NOW);
        expect(skipped).toBe(0);
        const byTime = [...rows].sort((a, b) => (a[0] as number) - (b[0] as number));
        expect(minutes.map((m) => [m.minute, formatUnits(m.open, 2), formatUnits(m.close, 2), formatUnits(m.volume, 5), m.count])).toEqual(
          byTime.map((r) => [r[0], r[1], r[4], r[5], r[8]]),
        );
      }),
    );
  });

  it("one spoiled field anywhere refuses the whole request, naming that row and field", () => {
    const spoilers: [field: number, spoil: (value: unknown, row: unknown[]) => unknown][] = [
      [0, (v) => (v as number) + 1], // not a minute's start
      [1, (v) => `${v}1`], // a third decimal
      [2, (_v, r) => formatUnits(BigInt(String(r[3]).replace(".", "")) - 1n, 2)], // high below low
      [5, (v) => `-${v}`], // a negative volume
      [6, (v) => (v as number) - 1], // not the minute's end
      [8, () => 1.5], // a count that is not an integer
      [9, (_v, r) => `${r[5]}1`.replace(/^(\d+)\.(\d{5})1$/, (_m, w, f) => `${BigInt(w) + 1n}.${f}`)], // taker volume above the volume
    ];
    fc.assert(
      fc.property(
        fc.uniqueArray(row, { selector: (r) => r[0], minLength: 1, maxLength: 20 }),
        fc.nat(),
        fc.constantFrom(...spoilers),
        (rows, at, [field, spoil]) => {
          const i = at % rows.length;
          const spoiled = rows.map((r, k) => (k === i ? r.map((v, f) => (f === field ? spoil(v, r) : v)) : r));
          expect(refusal(spoiled), `field ${field} of row ${i}`).toBe(`rows.${i}.${field}`);
        },
      ),
    );
  });

  it("reads Binance's CSV with or without its header; a row without trades is skipped", () => {
    const csv =
      "open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore\n60000,1.00,1.00,1.00,1.00,0.00000,119999,0.0000000,0,0.00000,0.0000000,0\n";
    expect(csvRows(csv)).toHaveLength(1);
    expect(csvRows(csv.split("\n").slice(1).join("\n"))).toHaveLength(1);
    expect(importedMinutes(csvRows(csv), market, NOW)).toEqual({ minutes: [], skipped: 1 });
  });

  it("a body that starts with a byte-order mark or spaces keeps its first row (before: taken for a header and dropped)", () => {
    const row = "60000,1.00,1.00,1.00,1.00,0.00000,119999,0.0000000,0,0.00000,0.0000000,0";
    for (const lead of ["\uFEFF", " ", "\t", "\r\n", "\uFEFF "]) {
      expect(csvRows(`${lead}${row}\n${row.replace("60000", "120000")}\n`), JSON.stringify(lead)).toHaveLength(2);
    }
    expect(csvRows(`\uFEFFopen_time,open,high\n${row}`), "a header after a byte-order mark").toHaveLength(1);
    // A first line that is neither a header nor a number is a row: its check refuses the import.
    expect(csvRows(`x60000,1.00\n${row}`)).toHaveLength(2);
  });
});
