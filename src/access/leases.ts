import { type Admission, type Grant, LEASE_MS, LEASE_SIZE, type LeasedAdmission } from "./sliding-window";

/**
 * Leased admissions, the isolate's side (docs/limits.md#leased-admissions): when this isolate
 * sees a principal again within `LEASE_MS`, it asks the guard for a lease of up to `LEASE_SIZE`
 * admissions and spends them itself for `LEASE_MS`, measured from before it asked (so the guard,
 * whose clock may differ, has granted no later than that). What it did not spend goes back to
 * the guard with its next call for the principal. Pure bookkeeping, the clock passed in.
 */
export interface HeldLease {
  grant: Grant;
  left: number;
  /** This isolate's clock: spend strictly before. */
  until: number;
  limit: number;
  /** What the guard had left beyond the lease when it granted: headers claim that plus the lease's unspent. */
  beyond: number;
  resetAt: number;
}

/** Bounded, like the local refusals: a flood of distinct principals cannot grow them without end. */
const MAX_REMEMBERED = 10_000;

export class IsolateLeases {
  private readonly held = new Map<string, HeldLease>();
  private readonly lastSeen = new Map<string, number>();
  private readonly unused = new Map<string, { id: string; unused: number }>();
  /** Requests of a principal waiting for its guard: a burst's requests are all in flight at once. */
  private readonly asking = new Map<string, number>();

  /** True when the principal's lease can admit one more at `now`. */
  canSpend(principal: string, now: number): boolean {
    const lease = this.held.get(principal);
    return lease !== undefined && now < lease.until && lease.left > 0;
  }

  /** An admission from the principal's lease, if one is held and unexpired. */
  spend(principal: string, now: number): Admission | undefined {
    const lease = this.held.get(principal);
    if (!lease) return undefined;
    if (now >= lease.until || lease.left === 0) {
      this.drop(principal, lease);
      return undefined;
    }
    lease.left -= 1;
    return {
      allowed: true,
      limit: lease.limit,
      remaining: lease.beyond + lease.left,
      resetMs: Math.max(0, lease.resetAt - now),
    };
  }

  /**
   * Starts asking the guard; returns how many admissions to ask for: a lease only when the
   * principal is busy here in sequence (seen within `LEASE_MS`, nothing else of it in flight). A
   * concurrent burst asks plainly: its requests are already on their way and could not spend a
   * lease, which would only hold slots they need. Pair with `done`.
   */
  asked(principal: string, now: number): number {
    const last = this.lastSeen.get(principal);
    if (this.lastSeen.size >= MAX_REMEMBERED) this.lastSeen.clear();
    this.lastSeen.set(principal, now);
    const inFlight = this.asking.get(principal) ?? 0;
    if (this.asking.size >= MAX_REMEMBERED) this.asking.clear();
    this.asking.set(principal, inFlight + 1);
    return last !== undefined && now - last < LEASE_MS && inFlight === 0 ? LEASE_SIZE : 0;
  }

  /** The guard answered (or failed) one request that `asked`. */
  done(principal: string): void {
    const inFlight = (this.asking.get(principal) ?? 1) - 1;
    if (inFlight <= 0) this.asking.delete(principal);
    else this.asking.set(principal, inFlight);
  }

  /** The hand-back to send with this call to the principal's guard, if any. */
  takeHandBack(principal: string): { id: string; unused: number } | undefined {
    const handBack = this.unused.get(principal);
    this.unused.delete(principal);
    return handBack;
  }

  /** Keeps what the guard granted; `askedAt` is this isolate's clock before it asked. */
  keep(principal: string, admission: LeasedAdmission, askedAt: number): void {
    if (!admission.allowed || !admission.lease) return;
    const previous = this.held.get(principal);
    if (previous) this.drop(principal, previous);
    // At the bound the oldest lease goes, its unspent admissions handed back like any expired one's.
    if (this.held.size >= MAX_REMEMBERED) {
      const [oldest, held] = this.held.entries().next().value!;
      this.drop(oldest, held);
    }
    this.held.set(principal, {
      grant: admission.lease,
      left: admission.lease.count - 1, // the asking request spends one
      until: askedAt + LEASE_MS,
      limit: admission.limit,
      beyond: admission.remaining - (admission.lease.count - 1),
      resetAt: askedAt + admission.resetMs,
    });
  }

  private drop(principal: string, lease: HeldLease): void {
    this.held.delete(principal);
    if (lease.left > 0) {
      if (this.unused.size >= MAX_REMEMBERED) this.unused.clear();
      this.unused.set(principal, { id: lease.grant.id, unused: lease.left });
    }
  }
}
