import { describe, expect, it } from "vitest";
import { MINUTE_MS } from "../../src/domain/intervals";
import { closeDelay } from "../../src/market/market-book-history";

describe("staggered hour closes (docs/history.md#staggered-closes)", () => {
  it("a group's 64 markets close their hour's segments over five minutes, a few at most in any ten seconds (fails before: all in the hour's first commit)", () => {
    for (const names of [
      Array.from({ length: 64 }, (_, i) => `V${String(i).padStart(4, "0")}USDT`),
      ["BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "ETHBTC", "SOLBTC", "BTCUSDC", "DOGEUSDT", "ADAUSDT", "AVAXUSDT", "LINKUSDT", "DOTUSDT"],
    ]) {
      const delays = names.map(closeDelay);
      for (const [i, delay] of delays.entries()) expect(delay, `${names[i]}'s delay`).toBeGreaterThanOrEqual(0);
      for (const [i, delay] of delays.entries()) expect(delay, `${names[i]}'s delay`).toBeLessThan(5 * MINUTE_MS);
      const most = Math.max(...delays.map((d) => delays.filter((e) => e >= d && e < d + 10_000).length));
      expect(most, `the most of ${names.length} markets closing within ten seconds`).toBeLessThanOrEqual(Math.max(3, Math.ceil(names.length / 10)));
      expect(new Set(delays).size, "different delays").toBeGreaterThan(names.length / 2);
    }
  });
});
