import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BoundedMap, CacheBudget } from "../../src/core/bounded-map";

const KEYS = ["a", "b", "c", "d", "e", "f"];
const BOUNDS = [
  { maxBytes: 60, maxEntries: 4 },
  { maxBytes: 100, maxEntries: 6 },
  { maxBytes: 40, maxEntries: 2 },
];
const BUDGET = 120;

type Op =
  | { op: "set"; map: number; key: string; bytes: number }
  | { op: "get"; map: number; key: string }
  | { op: "delete"; map: number; key: string }
  | { op: "clear"; map: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("set" as const), map: fc.nat(2), key: fc.constantFrom(...KEYS), bytes: fc.integer({ min: 1, max: 70 }) }),
  fc.record({ op: fc.constant("get" as const), map: fc.nat(2), key: fc.constantFrom(...KEYS) }),
  fc.record({ op: fc.constant("delete" as const), map: fc.nat(2), key: fc.constantFrom(...KEYS) }),
  fc.record({ op: fc.constant("clear" as const), map: fc.nat(2) }),
);

/** The model: every entry of every map in one list, least recently used first. */
type Entry = { map: number; key: string; bytes: number };
function apply(entries: Entry[], o: Op): Entry[] {
  const of = (map: number) => entries.filter((e) => e.map === map);
  const without = (gone: Entry) => entries.filter((e) => e !== gone);
  const found = "key" in o ? entries.find((e) => e.map === o.map && e.key === o.key) : undefined;
  switch (o.op) {
    case "get":
      return found ? [...without(found), found] : entries;
    case "delete":
      return found ? without(found) : entries;
    case "clear":
      return entries.filter((e) => e.map !== o.map);
    case "set": {
      if (found) entries = without(found);
      const { maxBytes, maxEntries } = BOUNDS[o.map]!;
      if (o.bytes > maxBytes) return entries;
      const sum = (list: Entry[]) => list.reduce((n, e) => n + e.bytes, 0);
      // Its own bounds first, its least recently used out; then the budget, the least recently used of any map out.
      while (of(o.map).length > 0 && (sum(of(o.map)) + o.bytes > maxBytes || of(o.map).length >= maxEntries)) entries = without(of(o.map)[0]!);
      while (entries.length > 0 && sum(entries) + o.bytes > BUDGET) entries = entries.slice(1);
      return [...entries, { map: o.map, key: o.key, bytes: o.bytes }];
    }
  }
}

describe("bounded maps that share an isolate's budget (docs/security.md#bounded-memory)", () => {
  it("hold together at most the budget and each at most its own bounds, the least recently used entry of any map out first — as a plain list of every entry says", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const budget = new CacheBudget(BUDGET);
        const maps = BOUNDS.map((b) => new BoundedMap<number>(b.maxBytes, b.maxEntries, (_key, bytes) => bytes, budget));
        let model: Entry[] = [];
        for (const [i, o] of ops.entries()) {
          const map = maps[o.map]!;
          if (o.op === "set") map.set(o.key, o.bytes);
          else if (o.op === "get") map.get(o.key);
          else if (o.op === "delete") map.delete(o.key);
          else map.clear();
          model = apply(model, o);
          const held = maps.map((m) => KEYS.filter((key) => m.peek(key) !== undefined));
          const expected = BOUNDS.map((_, n) => model.filter((e) => e.map === n).map((e) => e.key));
          expect(
            held.map((keys) => [...keys].sort()),
            `after op ${i} ${JSON.stringify(o)}`,
          ).toEqual(expected.map((keys) => [...keys].sort()));
          expect(budget.bytes, "the budget's count").toBe(model.reduce((n, e) => n + e.bytes, 0));
          expect(budget.bytes, "within the budget").toBeLessThanOrEqual(BUDGET);
          for (const [n, m] of maps.entries()) expect(m.bytes, `map ${n} within its bound`).toBeLessThanOrEqual(BOUNDS[n]!.maxBytes);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("a map without a budget counts against none", () => {
    const budget = new CacheBudget(10);
    const alone = new BoundedMap<number>(100, 10, (_key, bytes) => bytes);
    const shared = new BoundedMap<number>(100, 10, (_key, bytes) => bytes, budget);
    alone.set("a", 50);
    shared.set("b", 8);
    expect([alone.bytes, shared.bytes, budget.bytes]).toEqual([50, 8, 8]);
    shared.set("c", 11);
    expect(shared.peek("c"), "larger than the whole budget: not kept").toBeUndefined();
  });
  it("a read renews an entry against every map of the budget: the entry read stays, the other map's older one goes", () => {
    const budget = new CacheBudget(100);
    const first = new BoundedMap<number>(100, 10, (_key, bytes) => bytes, budget);
    const second = new BoundedMap<number>(100, 10, (_key, bytes) => bytes, budget);
    first.set("read", 40);
    second.set("unread", 40);
    first.get("read");
    second.set("new", 40);
    expect([first.peek("read"), second.peek("unread"), second.peek("new")]).toEqual([40, undefined, 40]);
  });
});
