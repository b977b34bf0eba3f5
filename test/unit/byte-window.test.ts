import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteWindow } from "../../src/core/byte-window";

describe("a byte window: at most `most` bytes in any `ms` (src/core/byte-window.ts)", () => {
  it("never lets more than `most` bytes through in any window, and lets through whatever fits", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 400 }), bytes: fc.integer({ min: 1, max: 3_000 }) }), { minLength: 1, maxLength: 200 }),
        (events) => {
          const window = new ByteWindow(10_000, 1_000);
          const taken: { at: number; bytes: number }[] = [];
          let now = 0;
          for (const { gap, bytes } of events) {
            now += gap;
            const inWindow = taken.filter((t) => t.at > now - 1_000).reduce((sum, t) => sum + t.bytes, 0);
            const took = window.take(bytes, now);
            expect(took, `${bytes} bytes at ${now} with ${inWindow} in the last second`).toBe(inWindow + bytes <= 10_000);
            if (took) taken.push({ at: now, bytes });
          }
        },
      ),
    );
  });

  it("says how long until bytes fit, and they fit then", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 50 }), fc.integer({ min: 1, max: 12_000 }), (sizes, next) => {
        const window = new ByteWindow(10_000, 1_000);
        let now = 0;
        for (const size of sizes) {
          now += 7;
          window.take(size, now);
        }
        const wait = window.waitFor(next, now);
        if (next <= 10_000) expect(window.take(next, now + wait), `${next} bytes after ${wait} ms`).toBe(true);
        else expect(wait, "one larger than the window waits for it to empty").toBeLessThanOrEqual(1_000);
      }),
    );
  });
});
