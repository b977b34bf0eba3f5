import { describe, expect, it } from "vitest";
import { type PriceReport, type PriceSnapshot, pricesIn } from "../../src/market/price-index";
import { registry } from "../support/registry";

const REGISTRY = await registry();

function report(symbol: string, lastPrice: string, openPrice: string, updatedAt = 1000, status: PriceReport["status"] = "TRADING"): PriceReport {
  return { symbol, status, lastPrice, openPrice, changePercent24h: "0.00", updatedAt };
}

const snapshot: PriceSnapshot = {
  asOf: 5000,
  markets: {
    BTCUSDT: { ...report("BTCUSDT", "97000.10", "96000.00", 1000), changePercent24h: "1.04" },
    SOLBTC: report("SOLBTC", "0.0015464", "0.0015000", 2000),
    ETHBTC: report("ETHBTC", "0.03500", "0.03500", 1500),
    XRPUSDT: report("XRPUSDT", "0.6000", "0.6000", 900, "DELISTED"),
  },
};

describe("price index: direct pairs first, else one bridge asset", () => {
  it("takes the direct pair when it exists", () => {
    expect(pricesIn(REGISTRY, snapshot, "USDT", ["BTC"])).toEqual([
      { asset: "BTC", name: "Bitcoin", decimals: 8, price: "97000.10", changePercent24h: "1.04", source: "BTCUSDT", updatedAt: 1000 },
    ]);
  });

  it("routes through a bridge exactly, rounding half away from zero to the finer leg's scale", () => {
    const [sol] = pricesIn(REGISTRY, snapshot, "USDT", ["SOL"]);
    // 0.0015464 × 97000.10 = 150.00095464 → 7 decimals (SOLBTC's scale)
    expect(sol).toMatchObject({ asset: "SOL", price: "150.0009546", source: "SOLBTC×BTCUSDT", updatedAt: 2000 });
    // open 0.0015 × 96000 = 144; (150.00095464 − 144) / 144 = 4.17 %
    expect(sol!.changePercent24h).toBe("4.17");
  });

  it("leaves out assets without a route, delisted markets and the quote itself", () => {
    const assets = pricesIn(REGISTRY, snapshot, "USDT").map((p) => p.asset);
    expect(assets).toEqual(["BTC", "ETH", "SOL"]);
    expect(pricesIn(REGISTRY, snapshot, "BTC").map((p) => p.asset)).toEqual(["ETH", "SOL"]);
    expect(pricesIn(REGISTRY, snapshot, "EUR")).toEqual([]);
  });
});
