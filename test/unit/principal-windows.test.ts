import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PrincipalWindows } from "../../src/access/principal-windows";
import { SlidingWindow } from "../../src/access/sliding-window";

describe("principal windows: many principals' exact limits in one object", () => {
  it("admits exactly as one window per principal kept for ever would, however often it is swept", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ who: fc.integer({ min: 0, max: 5 }), gap: fc.integer({ min: 0, max: 700 }) }), { maxLength: 300 }),
        fc.integer({ min: 6, max: 12 }),
        (requests, maxWindows) => {
          const gate = new PrincipalWindows(maxWindows);
          const model = new Map<string, SlidingWindow>();
          let now = 1_000_000;
          for (const [i, { who, gap }] of requests.entries()) {
            now += gap % 5 === 0 ? 0 : gap;
            const principal = `ip:198.51.100.${who}`;
            let kept = model.get(principal);
            if (!kept) model.set(principal, (kept = new SlidingWindow(10)));
            const expected = kept.admit(now);
            const admitted = gate.admit(principal, 10, now);
            expect(admitted, `request ${i} of ${principal} at ${now}`).toMatchObject({
              allowed: expected.allowed,
              remaining: expected.remaining,
              resetMs: expected.resetMs,
            });
            if (i % 17 === 0) gate.sweep(now);
          }
        },
      ),
    );
  });

  it("forgets only windows that hold nothing, holds at most maxWindows, and refuses a new principal past that", () => {
    const gate = new PrincipalWindows(3);
    for (const who of [1, 2, 3]) expect(gate.admit(`ip:a${who}`, 10, 5_000)?.allowed, `principal ${who}`).toBe(true);
    // Every window still holds an admission: a fourth principal cannot be counted, so it is not admitted.
    expect(gate.admit("ip:a4", 10, 5_500)).toBeUndefined();
    expect(gate.size).toBe(3);
    // A second on, the three hold nothing: swept, and the fourth is counted.
    expect(gate.admit("ip:a4", 10, 6_000)?.allowed).toBe(true);
    expect(gate.size).toBe(1);
  });

  it("a principal refused keeps its full window through a sweep: still refused until a slot frees", () => {
    const gate = new PrincipalWindows(100);
    for (let i = 0; i < 10; i += 1) gate.admit("ip:busy", 10, 7_000 + i);
    gate.sweep(7_500);
    expect(gate.admit("ip:busy", 10, 7_900)).toMatchObject({ allowed: false, resetMs: 100 });
    expect(gate.admit("ip:busy", 10, 8_000)?.allowed).toBe(true);
  });
});
