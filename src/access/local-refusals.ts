import type { Admission } from "./sliding-window";

/** Bounded, so a flood of distinct addresses cannot grow it without end. */
const MAX_REMEMBERED = 10_000;

/**
 * Refusal without a call: once a principal's guard refuses it, this isolate refuses the
 * principal's further requests itself until the guard's reset time, with the same 429. That is
 * exact: the guard's window was full, and no admission leaves it before the reset, so the guard
 * would refuse them too. A flood from one address then costs one guard call per window, not
 * one per request. Signed requests too (docs/limits.md#key-gates): a key its holder refused, and an
 * address over its limit with failed checks, are refused here until the reset — a refusal, so the
 * signature left unchecked and a revocation meanwhile change nothing that is served.
 *
 * @example
 * const admission = await refusals.admit("ip:203.0.113.9", Date.now(), () => gate.admit("ip:203.0.113.9", 10), Date.now);
 */
export class LocalRefusals {
  private readonly refusedUntil = new Map<string, { until: number; limit: number }>();

  /** The refusal this isolate can give `principal` at `now` without asking its guard, if any. */
  refusal(principal: string, now: number): Admission | undefined {
    const refused = this.refusedUntil.get(principal);
    if (!refused) return undefined;
    if (now >= refused.until) {
      this.refusedUntil.delete(principal);
      return undefined;
    }
    return { allowed: false, limit: refused.limit, remaining: 0, resetMs: refused.until - now };
  }

  /**
   * Refused here while a refusal of `principal` is remembered; else `ask`'s answer, a refusal
   * remembered until its reset. The guard's answer is as of its own clock; `clock`, read after it,
   * may be a little behind, which only makes the local refusal end sooner: never too long.
   */
  async admit(principal: string, now: number, ask: () => Promise<Admission>, clock: () => number): Promise<Admission> {
    const refused = this.refusal(principal, now);
    if (refused) return refused;
    const admission = await ask();
    this.remember(principal, admission, clock());
    return admission;
  }

  /** Remembers a guard's refusal until its reset. */
  remember(principal: string, admission: Admission, now: number): void {
    if (admission.allowed || admission.resetMs <= 0) return;
    if (this.refusedUntil.size >= MAX_REMEMBERED) {
      for (const [key, refused] of this.refusedUntil) if (refused.until <= now) this.refusedUntil.delete(key);
      if (this.refusedUntil.size >= MAX_REMEMBERED) this.refusedUntil.clear();
    }
    this.refusedUntil.set(principal, { until: now + admission.resetMs, limit: admission.limit });
  }
}
