import { afterEach, describe, expect, it, vi } from "vitest";
import { HeldUsage } from "../../src/access/held-usage";
import { KeyBook } from "../../src/access/key-book";
import type { KeyRecord } from "../../src/access/keys";
import type { HeldCounts } from "../../src/access/usage-ledger";

const record = (keyId: string, revokedAt: number | null = null): KeyRecord => ({
  keyId,
  accountId: "acc",
  sealedSecret: "sealed",
  permissions: ["read"],
  allowCidrs: [],
  expiresAt: null,
  createdAt: 0,
  revokedAt,
});

/** A guard's side of the book: what it stores, how often it was asked, and reads held until released. */
function guards() {
  const stored = new Map<string, KeyRecord>();
  const asked: string[] = [];
  let hold: Promise<void> | undefined;
  let release = () => {};
  return {
    stored,
    asked,
    holdReads() {
      hold = new Promise((resolve) => {
        release = () => {
          hold = undefined;
          resolve();
        };
      });
    },
    release: () => release(),
    fetch: async (keyId: string) => {
      asked.push(keyId);
      // Read as stored when asked; answered when released (a revocation may land in between).
      const found = stored.get(keyId);
      if (hold) await hold;
      return found ? { record: found, lastUseStored: null } : null;
    },
  };
}

describe("key book: the account keys' records a gate holds (docs/limits.md#key-gates)", () => {
  it("reads a key's record once, and again only when forgotten or past its age", async () => {
    const g = guards();
    g.stored.set("mk_a", record("mk_a"));
    const book = new KeyBook(10, 600_000, g.fetch);
    await Promise.all([book.entryOf("mk_a", 0), book.entryOf("mk_a", 0), book.entryOf("mk_a", 10)]);
    expect(g.asked, "three concurrent requests of a key not held: one read").toEqual(["mk_a"]);
    g.stored.set("mk_a", record("mk_a", 5));
    expect((await book.entryOf("mk_a", 599_999))?.record.revokedAt, "held within its age, unchanged").toBeNull();
    book.forget("mk_a");
    expect((await book.entryOf("mk_a", 600_000))?.record.revokedAt, "forgotten: read again").toBe(5);
    g.stored.set("mk_a", record("mk_a", 7));
    expect((await book.entryOf("mk_a", 600_000 + 600_000))?.record.revokedAt, "past its age: read again").toBe(7);
    expect(g.asked.length).toBe(3);
  });

  it("a key forgotten while its record was being read is read again: the read under way does not stand", async () => {
    const g = guards();
    g.stored.set("mk_b", record("mk_b"));
    const book = new KeyBook(10, 600_000, g.fetch);
    g.holdReads();
    const before = book.entryOf("mk_b", 0);
    // The revocation lands at the guard after it answered the read, and the gate is told before the read's answer arrives.
    await Promise.resolve();
    g.stored.set("mk_b", record("mk_b", 9));
    book.forget("mk_b");
    g.release();
    expect((await before)?.record.revokedAt, "a request waiting on the read sees the revocation").toBe(9);
    expect((await book.entryOf("mk_b", 1))?.record.revokedAt).toBe(9);
  });

  it("holds no key its guard does not know (a new key works at once), and at most maxKeys, the least recently used dropped", async () => {
    const g = guards();
    const book = new KeyBook(3, 600_000, g.fetch);
    expect(await book.entryOf("mk_new", 0)).toBeNull();
    g.stored.set("mk_new", record("mk_new"));
    expect((await book.entryOf("mk_new", 1))?.record.keyId, "created after a request named it").toBe("mk_new");
    for (const id of ["mk_1", "mk_2", "mk_3"]) g.stored.set(id, record(id));
    await book.entryOf("mk_1", 2);
    await book.entryOf("mk_2", 2);
    await book.entryOf("mk_new", 3); // used again: kept over mk_1
    await book.entryOf("mk_3", 4);
    expect(book.size, "the bound").toBe(3);
    const asked = g.asked.length;
    await book.entryOf("mk_new", 5);
    await book.entryOf("mk_3", 5);
    expect(g.asked.length, "the recently used still held").toBe(asked);
    await book.entryOf("mk_1", 5);
    expect(g.asked.slice(asked), "the least recently used was dropped, and is read again").toEqual(["mk_1"]);
  });
});

describe("held usage: a gate's counts handed to the ledgers, one call a ledger", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const requestsIn = (held: HeldCounts) => [...(held.get("1m")?.values() ?? [])].flatMap((keys) => [...keys]).map(([keyId, [n]]) => `${keyId}:${n}`);

  it("hands every count over once, a call a ledger, within its interval; a ledger that failed gets its counts at the next", async () => {
    vi.useFakeTimers();
    const sent: { ledger: number; requests: string[] }[] = [];
    let failing = new Set<number>([1]);
    const usage = new HeldUsage(
      async (ledger, held) => {
        if (failing.has(ledger)) throw new Error(`ledger ${ledger} down`);
        sent.push({ ledger, requests: requestsIn(held).sort() });
      },
      (keyId) => (keyId.endsWith("odd") ? 1 : 0),
      5_000,
    );
    const at = 1_700_000_000_000;
    for (let i = 0; i < 30; i += 1) usage.count(`mk_${i % 3}_${i % 2 ? "odd" : "even"}`, at, false);
    expect(sent, "nothing before the interval").toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sent, "one call to the ledger that answered, for all its keys").toEqual([{ ledger: 0, requests: ["mk_0_even:5", "mk_1_even:5", "mk_2_even:5"] }]);
    failing = new Set();
    usage.count("mk_0_odd", at, true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sent.slice(1), "the failed ledger's counts, held again, with what came since").toEqual([
      { ledger: 1, requests: ["mk_0_odd:6", "mk_1_odd:5", "mk_2_odd:5"] },
    ]);
    await usage.handOver();
    expect(sent.length, "nothing held: no call").toBe(2);
  });
});
