import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CLAIM_LEASE_MS, type Copy, copyKey, EdgeCopies, isNewer } from "../../src/reads/edge-copies";

const answer = fc.record({ at: fc.integer({ min: 0, max: 50 }), version: fc.integer({ min: 0, max: 5 }), fetchedAt: fc.integer({ min: 0, max: 1_000 }) });
const copyOf = (a: { at: number; version: number; fetchedAt: number }): Copy => ({ text: `${a.at}.${a.version}`, ...a });

describe("edge copies (docs/edge-reads.md)", () => {
  it("whatever order refreshes land in, the held copy is the latest moment offered: an isolate never goes back", () => {
    fc.assert(
      fc.property(fc.array(answer, { minLength: 1, maxLength: 30 }), (answers) => {
        const copies = new EdgeCopies();
        let shown: Copy | undefined;
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
        expect("serve" in copies.next("k", fetchedAt + elapsed, { maxAgeMs: maxAge, staleIfErrorMs: 0 }), `age ${elapsed} under max ${maxAge}`).toBe(
          elapsed < maxAge,
        );
      }),
    );
  });

  it("an equal answer from a later refresh renews the copy's age; an older one does not", () => {
    const copies = new EdgeCopies();
    copies.offer("k", copyOf({ at: 10, version: 1, fetchedAt: 100 }));
    expect(copies.offer("k", copyOf({ at: 10, version: 1, fetchedAt: 300 })).fetchedAt).toBe(300);
    expect(copies.offer("k", copyOf({ at: 9, version: 1, fetchedAt: 400 })).fetchedAt).toBe(300);
  });

  it("a read runs one way: a stale copy is refreshed by one read while the others wait, and the waiting take what it brought", () => {
    const copies = new EdgeCopies();
    const policy = { maxAgeMs: 250, staleIfErrorMs: 5_000 };
    copies.offer("k", copyOf({ at: 1, version: 0, fetchedAt: 0 }));
    const first = copies.next("k", 300, policy);
    const second = copies.next("k", 300, policy);
    expect([first, second], "the first refreshes, the second waits").toEqual([{ refresh: 300 }, { wait: true }]);
    expect(copies.next("k", 2_400, policy, { waitingSince: 300, mayRefresh: false }), "waited too long: claims nothing").toEqual({ wait: true });
    copies.settle("k", 300, { copy: copyOf({ at: 2, version: 0, fetchedAt: 300 }), tookMs: 40 });
    const waited = copies.next("k", 2_500, policy, { waitingSince: 300 });
    expect(waited, "a copy refreshed after the wait began is served, whatever its age").toEqual({ serve: expect.objectContaining({ at: 2 }) });
    expect(copies.fallback("k", 5_299, policy)?.at, "stale-if-error within its bound").toBe(2);
    expect(copies.fallback("k", 5_300, policy), "past it").toBeUndefined();
  });

  it("a served copy old enough claims one refresh ahead, and only when the read may refresh in the background", () => {
    const copies = new EdgeCopies();
    const policy = { maxAgeMs: 250, staleIfErrorMs: 5_000 };
    copies.offer("k", copyOf({ at: 1, version: 0, fetchedAt: 0 }));
    expect(copies.next("k", 124, policy, { ahead: true }), "younger than half the max age").toEqual({ serve: expect.anything(), ahead: undefined });
    expect(copies.next("k", 200, policy), "no background refresh allowed").toEqual({ serve: expect.anything(), ahead: undefined });
    expect(copies.next("k", 200, policy, { ahead: true }), "old enough").toEqual({ serve: expect.anything(), ahead: 200 });
    expect(copies.next("k", 201, policy, { ahead: true }), "one refresh at a time").toEqual({ serve: expect.anything(), ahead: undefined });
  });

  it("refreshes of one key are bounded; releasing frees a place", () => {
    const copies = new EdgeCopies();
    const first = copies.claimRefresh("k", 1, 0);
    expect([first, copies.claimRefresh("k", 1, 1), copies.claimRefresh("other", 1, 1)]).toEqual([0, undefined, 1]);
    copies.releaseRefresh("k", first!);
    expect([copies.refreshing("k", 2), copies.claimRefresh("k", 1, 2)]).toEqual([0, 2]);
  });

  it("a claim never released (its request cancelled, its continuations dropped) lapses: the key is not held for good", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 2 * CLAIM_LEASE_MS }), (claimedAt, later) => {
        const copies = new EdgeCopies();
        expect(copies.claimRefresh("k", 1, claimedAt)).toBe(claimedAt);
        const next = copies.claimRefresh("k", 1, claimedAt + later);
        expect(next !== undefined, `a claim ${later} ms after one never released`).toBe(later >= CLAIM_LEASE_MS);
        expect(copies.refreshing("k", claimedAt + later), "refreshes counted").toBe(1);
        // The lapsed claim's late release (a refresh slower than the lease) frees nothing of the new one's.
        copies.releaseRefresh("k", claimedAt);
        expect(copies.refreshing("k", claimedAt + later), "after the lapsed claim's release").toBe(later >= CLAIM_LEASE_MS ? 1 : 0);
      }),
    );
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
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("klines bounds are keyed by the candle they resolve to: 1 ms changes share one copy, another candle does not", () => {
    const key = (startTime: number, endTime: number) =>
      copyKey("BTCUSDT", { kind: "klines", query: { interval: "1M", limit: 1000, startTime, endTime, offsetMs: 19_800_000 } });
    const may = Date.UTC(2026, 4, 10);
    expect(key(may, may + 86_400_000)).toBe(key(may + 1, may + 86_400_001));
    expect(key(may, may + 86_400_000)).not.toBe(key(may, may + 40 * 86_400_000));
  });
  it("a copy is refreshed ahead between half and three quarters of the max age, early enough for a refresh as slow as the last", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5_000 }), fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 40 }), (maxAge, durations) => {
        const copies = new EdgeCopies();
        for (const took of durations) {
          copies.noteRefresh("k", took);
          const at = copies.refreshAheadAge("k", maxAge);
          expect(at, `after a refresh of ${took} ms, max age ${maxAge}`).toBeGreaterThanOrEqual(maxAge / 2);
          expect(at, `after a refresh of ${took} ms, max age ${maxAge}`).toBeLessThanOrEqual((3 * maxAge) / 4);
          // The same refresh again, begun at that age, lands before the copy expires whenever half the age allows it.
          expect(at, `after a refresh of ${took} ms, max age ${maxAge}`).toBeLessThanOrEqual(Math.max(maxAge / 2, maxAge - 2 * took));
        }
      }),
    );
  });

  it("a market next door is asked once per 3/4 of the max age; a far or failing one once per half, until its refreshes are fast again", () => {
    const copies = new EdgeCopies();
    expect(copies.refreshAheadAge("k", 250), "never refreshed: as if far away").toBe(125);
    copies.noteRefresh("k", 2);
    expect(copies.refreshAheadAge("k", 250), "a 2 ms refresh").toBe(187.5);
    copies.noteRefresh("k", 100);
    expect(copies.refreshAheadAge("k", 250), "a 100 ms refresh counts at once").toBe(125);
    let fastOnes = 0;
    while (copies.refreshAheadAge("k", 250) < 187.5) {
      copies.noteRefresh("k", 2);
      fastOnes += 1;
    }
    expect(fastOnes, "fast refreshes until three quarters again").toBe(12);
    expect(copies.refreshAheadAge("other", 250), "per key").toBe(125);
  });
});
