import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Copy, copyKey, EdgeCopies, isNewer } from "../../src/market/edge-copies";

const answer = fc.record({ at: fc.integer({ min: 0, max: 50 }), version: fc.integer({ min: 0, max: 5 }), fetchedAt: fc.integer({ min: 0, max: 1_000 }) });
const copyOf = (a: { at: number; version: number; fetchedAt: number }): Copy => ({ text: `${a.at}.${a.version}`, ...a });

describe("edge copies (docs/edge-reads.md)", () => {
  it("whatever order refreshes land in, the held copy is the latest moment offered: an isolate never goes back", () => {
    fc.assert(
      fc.property(fc.array(answer, { minLength: 1, maxLength: 30 }), (answers) => {
        const copies = new EdgeCopies();
        let shown = copies.latest("k");
        for (const a of answers) {
          const held = copies.offer("k", copyOf(a));
          if (shown) expect(isNewer(shown, held), `went back from ${shown.text} to ${held.text}`).toBe(false);
          shown = held;
        }
        const latest = answers.reduce((best, a) => (a.at > best.at || (a.at === best.at && a.version > best.version) ? a : best));
        expect([shown!.at, shown!.version], "the latest moment offered").toEqual([latest.at, latest.version]);
      }),
    );
  });

  it("a copy is fresh strictly below the max age, counted from when its refresh began", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 0, max: 2_000 }), (fetchedAt, maxAge, elapsed) => {
        const copies = new EdgeCopies();
        copies.offer("k", copyOf({ at: fetchedAt, version: 0, fetchedAt }));
        expect(copies.fresh("k", fetchedAt + elapsed, maxAge) !== undefined, `age ${elapsed} under max ${maxAge}`).toBe(elapsed < maxAge);
      }),
    );
  });

  it("an equal answer from a later refresh renews the copy's age; an older one does not", () => {
    const copies = new EdgeCopies();
    copies.offer("k", copyOf({ at: 10, version: 1, fetchedAt: 100 }));
    expect(copies.offer("k", copyOf({ at: 10, version: 1, fetchedAt: 300 })).fetchedAt).toBe(300);
    expect(copies.offer("k", copyOf({ at: 9, version: 1, fetchedAt: 400 })).fetchedAt).toBe(300);
  });

  it("refreshes of one key are bounded; releasing frees a place", () => {
    const copies = new EdgeCopies();
    expect([copies.claimRefresh("k", 1), copies.claimRefresh("k", 1), copies.claimRefresh("other", 1)]).toEqual([true, false, true]);
    copies.releaseRefresh("k");
    expect([copies.refreshing("k"), copies.claimRefresh("k", 1)]).toEqual([0, true]);
  });

  it("one copy per market and question", () => {
    const keys = [
      copyKey("BTCUSDT", { kind: "ticker" }),
      copyKey("ETHUSDT", { kind: "ticker" }),
      copyKey("BTCUSDT", { kind: "book", depth: 100 }),
      copyKey("BTCUSDT", { kind: "book", depth: 10 }),
      copyKey("BTCUSDT", { kind: "trades", limit: 10 }),
      copyKey("BTCUSDT", { kind: "klines", query: { interval: "1m", limit: 10 } }),
      copyKey("BTCUSDT", { kind: "klines", query: { interval: "1m", limit: 10, startTime: 0 } }),
      copyKey("BTCUSDT", { kind: "describe" }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});
