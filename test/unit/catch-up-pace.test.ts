import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CATCH_UP_BYTES_PER_SECOND, CATCH_UP_WINDOW_BYTES, paceWait } from "../../src/streams/catch-up-window";

describe("a catch-up's pace (docs/streams.md#from-any-moment)", () => {
  it("however fast a client answers, a connection is sent at most CATCH_UP_BYTES_PER_SECOND over any run of windows, plus the window under way (property; fails before: a window as soon as asked)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 60 }), (answerDelays) => {
        // Each window begins when its `more` has waited out the pace; the client answers after its delay.
        let now = 1_000_000;
        let windowAt = now;
        const starts = [windowAt];
        for (const delay of answerDelays) {
          now += delay;
          now += paceWait(windowAt, now);
          windowAt = now;
          starts.push(windowAt);
        }
        const elapsed = (starts.at(-1)! - starts[0]!) / 1000;
        const sent = starts.length * CATCH_UP_WINDOW_BYTES;
        expect(sent, `bytes of ${starts.length} windows over ${elapsed} s`).toBeLessThanOrEqual(CATCH_UP_BYTES_PER_SECOND * elapsed + CATCH_UP_WINDOW_BYTES);
      }),
    );
  });

  it("a client slower than the pace waits for nothing", () => {
    const gap = (CATCH_UP_WINDOW_BYTES * 1000) / CATCH_UP_BYTES_PER_SECOND;
    expect(paceWait(0, gap), "a window's time after the last began").toBe(0);
    expect(paceWait(0, gap + 1), "later still").toBe(0);
    expect(paceWait(0, 100), "a client that answered at once").toBe(gap - 100);
  });
});
