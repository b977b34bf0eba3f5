import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ringSlots } from "../../src/core/ring-slots";

describe("a run of numbers as the slots of a ring (src/core/ring-slots.ts)", () => {
  it("admits exactly the slots of first…last in SQLite: one range, two where the ring wraps, all once the run fills it, none for an empty run (property)", async () => {
    const stub = env.DEMO_FEED_OBJECT.get(env.DEMO_FEED_OBJECT.idFromName("ring-slots"));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS ring (slot INTEGER PRIMARY KEY)");
      for (let slot = 0; slot < 64; slot++) sql.exec("INSERT OR IGNORE INTO ring (slot) VALUES (?)", slot);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 64 }), fc.nat(10_000), fc.integer({ min: -2, max: 80 }), (slots, first, length) => {
          const last = first + length - 1;
          const expected = [...new Set(Array.from({ length: Math.max(0, length) }, (_, i) => (first + i) % slots))].sort((a, b) => a - b);
          const found = sql
            .exec<{ slot: number }>(`SELECT slot FROM ring WHERE slot < ? AND ${ringSlots(first, last, slots)} ORDER BY slot`, slots)
            .toArray()
            .map((r) => r.slot);
          expect(found, `${first}…${last} in ${slots} slots`).toEqual(expected);
        }),
      );
    });
  });
});
