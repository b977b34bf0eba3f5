import { type ProblemError, problem } from "../core/problem";
import { type Admission, SlidingWindow } from "./sliding-window";

/**
 * The rate windows of many principals in one object (an address gate's addresses), each exact as
 * its own guard's would be. A window that holds nothing admits as a new one does, so it is dropped
 * when the map is swept; what stays is bounded by the admissions of the last window —
 * `maxWindows` — and past that, after a sweep, a new principal is refused (`undefined`: the caller
 * answers 503, the limits fail closed) rather than an old window forgotten.
 *
 * @example
 * const windows = new PrincipalWindows(20_000);
 * const admission = windows.admit("ip:203.0.113.9", 10, Date.now());
 */
export class PrincipalWindows {
  private readonly windows = new Map<string, SlidingWindow>();
  /** Sweeps wait for this many new windows since the last one: each costs a pass over the map. */
  private grownSinceSweep = 0;

  constructor(readonly maxWindows: number) {}

  /** Windows held now (the bound's tests, the operator's view). */
  get size(): number {
    return this.windows.size;
  }

  /** Admits one request of `principal` against `limit` at `now`, or undefined when no window can be held for it. */
  admit(principal: string, limit: number, now: number): Admission | undefined {
    return this.windowOf(principal, limit, now)?.admit(now);
  }

  private windowOf(principal: string, limit: number, now: number): SlidingWindow | undefined {
    const held = this.windows.get(principal);
    if (held?.limit === limit) return held;
    if (!held) {
      if (this.windows.size >= this.maxWindows || this.grownSinceSweep >= this.maxWindows / 4) this.sweep(now);
      if (this.windows.size >= this.maxWindows) return undefined;
      this.grownSinceSweep += 1;
    }
    const made = new SlidingWindow(limit);
    this.windows.set(principal, made);
    return made;
  }

  /** Drops the windows that hold nothing at `now`. */
  sweep(now: number): void {
    for (const [principal, window] of this.windows) if (window.isEmpty(now)) this.windows.delete(principal);
    this.grownSinceSweep = 0;
  }
}

/** The 503 when {@link PrincipalWindows} can hold no window for a principal (docs/limits.md#address-gates): never an uncounted admission. */
export function windowsFull(): ProblemError {
  return problem("UNAVAILABLE", "the rate limiter is counting too many addresses and keys; try again shortly", {}, { "Retry-After": "1" });
}
