import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deriveMarket, GROUP_SIZE, groupOf, type RegistrySnapshot } from "../../src/domain/market-config";
import { MAX_REFRESH_WAIT_MS, RegistryCopy } from "../../src/registry/copy";
import type { RegistryText } from "../../src/registry/registry-object";

const publication = (version: number, symbols: string[], epoch = "e1"): RegistryText => {
  const snapshot: RegistrySnapshot = {
    version,
    assets: [],
    markets: symbols.map((symbol, ordinal) => ({
      symbol,
      base: symbol.slice(0, 3),
      quote: symbol.slice(3),
      priceScale: 2,
      quantityScale: 2,
      status: "TRADING",
      rules: { tickSize: "0.01", stepSize: "0.01", minQty: "0.01", maxQty: "100", minNotional: "1" },
      ordinal,
      revision: 1,
    })),
  };
  return { epoch, version, text: JSON.stringify(snapshot) };
};

describe("an isolate's registry copy (docs/operations.md#listing-markets)", () => {
  it("a listing published at any moment is served within one refresh interval, plus the gap to the next request (injected clock)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 50_000 }), async (interval, publishedAt) => {
        let source = publication(1, ["BTCUSDT"]);
        let asks = 0;
        const copy = new RegistryCopy(async (epoch, version) => {
          asks += 1;
          return epoch === source.epoch && version === source.version ? null : source;
        });
        let clock = 0;
        const background: Promise<unknown>[] = [];
        const read = async () => (await copy.ensure(clock, interval, (p) => background.push(p))).bySymbol.has("ETHUSDT");
        await read();
        let seenAt: number | undefined;
        // Requests every 100 ms; the new listing appears at `publishedAt`.
        for (clock = 0; clock <= publishedAt + interval + 200; clock += 100) {
          if (clock >= publishedAt && source.version === 1) source = publication(2, ["BTCUSDT", "ETHUSDT"]);
          if ((await read()) && seenAt === undefined) seenAt = clock;
          await Promise.all(background.splice(0));
        }
        expect(seenAt, "the listing was never seen").toBeDefined();
        // The first request past the interval starts the refresh and is served the copy it has; the
        // next one (requests come every 100 ms here) gets the new listing.
        expect(seenAt! - publishedAt).toBeLessThanOrEqual(interval + 200);
        // One ask per interval at most (plus the first load), not one per request.
        expect(asks).toBeLessThanOrEqual(Math.ceil((publishedAt + interval + 200) / Math.max(interval, 100)) + 2);
      }),
      { numRuns: 40 },
    );
  });

  it("an older publication never replaces a newer one; another epoch always does", () => {
    const copy = new RegistryCopy(async () => null);
    copy.adopt(publication(5, ["BTCUSDT", "ETHUSDT"]));
    expect(copy.adopt(publication(4, ["BTCUSDT"])).snapshot.version).toBe(5);
    expect(copy.adopt(publication(1, ["SOLUSDT"], "e2")).bySymbol.has("SOLUSDT")).toBe(true);
  });
});

describe("listing rules (docs/operations.md#listing-markets)", () => {
  const decimal = (scale: number) => fc.integer({ min: 1, max: 10_000 }).map((units) => (scale === 0 ? String(units) : (units / 10 ** scale).toFixed(scale)));

  it("the scales are the decimals of tick and step; a consistent listing is accepted", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 50 }), (ps, qs, steps) => {
        const tick = ps === 0 ? "1" : `0.${"0".repeat(ps - 1)}1`;
        const step = qs === 0 ? "1" : `0.${"0".repeat(qs - 1)}1`;
        const minQty = qs === 0 ? String(steps) : (steps / 10 ** qs).toFixed(qs);
        const result = deriveMarket({ base: "AAA", quote: "BBB", tickSize: tick, stepSize: step, minQty, maxQty: "1000000", minNotional: "1" }, 0);
        expect(result.errors).toBeUndefined();
        expect([result.market!.priceScale, result.market!.quantityScale]).toEqual([ps, qs]);
      }),
    );
  });

  it("a minQty below the step, a maxQty below minQty, or a quantity between steps is refused naming the field", () => {
    fc.assert(
      fc.property(decimal(2), (any) => {
        const base = { base: "AAA", quote: "BBB", tickSize: "0.01", stepSize: "0.5", minQty: "1", maxQty: "10", minNotional: "1" };
        expect(deriveMarket({ ...base, minQty: "0.25" }, 0).errors?.map((e) => e.path)).toEqual(["minQty"]);
        expect(deriveMarket({ ...base, maxQty: "0.5" }, 0).errors?.map((e) => e.path)).toEqual(["maxQty"]);
        expect(deriveMarket({ ...base, minQty: "1.5", maxQty: "10.3" }, 0).errors?.map((e) => e.path)).toEqual(["maxQty"]);
        const negative = deriveMarket({ ...base, minNotional: `-${any}` }, 0);
        expect(negative.errors?.map((e) => e.path)).toEqual(["minNotional"]);
      }),
      { numRuns: 20 },
    );
  });

  it("groups hold 64 markets in listing order", () => {
    fc.assert(
      fc.property(fc.nat(100_000), (ordinal) => {
        expect(groupOf({ ordinal })).toBe(Math.floor(ordinal / GROUP_SIZE));
      }),
    );
  });
});

describe("an isolate's registry copy when the registry cannot be asked", () => {
  it("serves the copy it holds, and without one answers 503 UNAVAILABLE", async () => {
    let failing = false;
    const copy = new RegistryCopy(async () => {
      if (failing) throw new Error("registry down (test)");
      return publication(1, ["BTCUSDT"]);
    });
    await copy.ensure(0, 1000);
    failing = true;
    // Far past the interval: the request waits for the refresh, which fails — the held copy answers.
    expect((await copy.ensure(60_000, 1000)).bySymbol.has("BTCUSDT")).toBe(true);
    const empty = new RegistryCopy(async () => {
      throw new Error("registry down (test)");
    });
    await expect(empty.ensure(0, 1000)).rejects.toMatchObject({ code: "UNAVAILABLE", status: 503 });
  });
});

describe("an isolate's registry copy waited for by several requests (src/core/cross-request-wait.ts)", () => {
  it("a refresh whose request ended unanswered does not hold the others: after MAX_REFRESH_WAIT_MS a request asks again (before: every later request hung)", async () => {
    let asks = 0;
    const copy = new RegistryCopy(async () => {
      asks += 1;
      // The first ask belongs to a request that went away: its answer never comes.
      if (asks === 1) return new Promise<never>(() => {});
      return publication(1, ["BTCUSDT"]);
    });
    let t = 0;
    const clock = () => t;
    const wait = async (ms: number) => {
      t += ms;
    };
    void copy.ensure(0, 1000, undefined, clock, wait);
    // A second request while the first's refresh is young waits for it, then gives up: 503, not a hang.
    await expect(copy.ensure(0, 1000, undefined, clock, wait)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    expect(t, "it waited no longer than the bound").toBeLessThanOrEqual(MAX_REFRESH_WAIT_MS + 8);
    // The next request forgets the lost refresh and asks itself.
    expect((await copy.ensure(t, 1000, undefined, clock, wait)).bySymbol.has("BTCUSDT")).toBe(true);
    expect(asks).toBe(2);
  });

  it("a request that finds a refresh under way takes its answer without asking again", async () => {
    let answer!: (text: ReturnType<typeof publication>) => void;
    let asks = 0;
    const copy = new RegistryCopy(() => {
      asks += 1;
      return new Promise((resolve) => {
        answer = resolve;
      });
    });
    let t = 0;
    const first = copy.ensure(0, 1000, undefined, () => t);
    const second = copy.ensure(
      0,
      1000,
      undefined,
      () => t,
      async (ms) => {
        t += ms;
        if (t >= 4) answer(publication(1, ["ETHUSDT"]));
        await Promise.resolve();
      },
    );
    expect((await second).bySymbol.has("ETHUSDT")).toBe(true);
    expect((await first).bySymbol.has("ETHUSDT")).toBe(true);
    expect(asks).toBe(1);
  });
});
