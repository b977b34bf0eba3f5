import { pollUntil, sleep } from "../core/cross-request-wait";
import { IsolateLeases } from "./leases";
import { LocalRefusals } from "./local-refusals";
import type { Admission, LeasedAdmission } from "./sliding-window";

/** Lease asks in flight at once in one isolate (each is one principal's, for one guard round trip). */
const MAX_LEASE_ASKS = 10_000;
/**
 * How long a request waits for another request's lease ask (polling its `settled` flag, never
 * awaiting its promise: `core/cross-request-wait.ts`); an ask unanswered that long is forgotten.
 */
export const MAX_LEASE_WAIT_MS = 1_000;

interface LeaseAsk {
  at: number;
  /** Set by the asking request when the guard answered (or failed). */
  settled: boolean;
  /** Forgotten by a waiter after MAX_LEASE_WAIT_MS: its own end, if it comes, changes nothing. */
  abandoned: boolean;
}

/** What the isolate asks a principal's guard: one admission, or a lease, with what it hands back. */
export type AskGuard = (options: { lease: number; handBack?: { id: string; unused: number } }) => Promise<LeasedAdmission>;

/**
 * The isolate's side of a rate limit (docs/limits.md#leased-admissions), with the clock and the
 * guard passed in: a held lease is spent first, then a remembered refusal answers without a call,
 * and only then is the guard asked. A lease is spent even while a refusal is remembered: its
 * admissions are already counted in the guard's window, so refusing them would under-admit (a
 * cold burst got 9 of 10 that way).
 *
 * @example
 * const admission = await limiter.admit("ip:203.0.113.9", Date.now(), (options) => guard.admit(10, undefined, options), Date.now);
 */
export class IsolateLimiter {
  private readonly refusals = new LocalRefusals();
  private readonly leases = new IsolateLeases();
  /**
   * A principal's lease ask in flight. Requests arriving meanwhile wait for it instead of asking
   * the guard plainly: the lease's slots are already held in the guard's window, so a burst that
   * began just after a lease was asked would otherwise be refused those slots and end one short
   * (9 of 10 when the lease came back after the burst). Bounded by the leases' own bound.
   */
  private readonly leaseAsks = new Map<string, LeaseAsk>();

  /** The refusal this isolate gives `principal` at `now` without asking, unless a held lease can still admit it. */
  refusal(principal: string, now: number): Admission | undefined {
    if (this.leases.canSpend(principal, now)) return undefined;
    return this.refusals.refusal(principal, now);
  }

  /**
   * Admits one request of `principal` at `now` (this isolate's clock), or says why not; `clock`
   * reads the time after the guard answered, `wait` sleeps on this request's own timer.
   */
  async admit(principal: string, now: number, ask: AskGuard, clock: () => number, wait: (ms: number) => Promise<void> = sleep): Promise<Admission> {
    const pending = this.leaseAsks.get(principal);
    if (pending) {
      const answered = await pollUntil(() => pending.settled, pending.at + MAX_LEASE_WAIT_MS, clock, wait);
      // Still unanswered after the wait: its request ended without the answer; forget it.
      if (!answered && this.leaseAsks.get(principal) === pending) this.abandon(principal, pending);
      now = Math.max(now, clock());
    }
    const leased = this.leases.spend(principal, now);
    if (leased) return leased;
    const refused = this.refusals.refusal(principal, now);
    if (refused) return refused;
    const options = { lease: this.leases.asked(principal, now), handBack: this.leases.takeHandBack(principal) };
    let admission: LeasedAdmission;
    const asking = ask(options);
    const entry: LeaseAsk = { at: clock(), settled: false, abandoned: false };
    if (options.lease > 0 && this.leaseAsks.size < MAX_LEASE_ASKS) this.leaseAsks.set(principal, entry);
    try {
      admission = await asking;
    } finally {
      entry.settled = true;
      if (!entry.abandoned) this.leases.done(principal);
      if (this.leaseAsks.get(principal) === entry) this.leaseAsks.delete(principal);
    }
    if (!admission.allowed) {
      // The guard's answer is as of its own clock; the isolate's may be a little behind, which
      // only makes the local refusal end sooner (the guard then decides again): never too long.
      this.refusals.remember(principal, admission, clock());
      return admission;
    }
    this.leases.keep(principal, admission, now);
    return admission;
  }

  /** Remembers a refusal given elsewhere (a key's holder, an address's failed checks): refused here without a call until its reset. */
  remember(principal: string, admission: Admission, now: number): void {
    this.refusals.remember(principal, admission, now);
  }

  /** An ask whose request ended unanswered: it no longer holds the principal's requests or its leases. */
  private abandon(principal: string, pending: LeaseAsk): void {
    pending.abandoned = true;
    this.leaseAsks.delete(principal);
    this.leases.done(principal);
  }
}
