/**
 * "At most `limit` admitted in any rolling window of `windowMs`", exactly, also when isolates
 * spend admissions granted ahead (leases, docs/limits.md#leased-admissions). Pure: the guard
 * passes its clock in. Memory is O(limit).
 *
 * Each admission occupies a slot: a plain one from its time for `windowMs`; a leased one from the
 * grant until grant + `leaseMs` + `windowMs`, because the isolate may spend it any time before
 * grant + `leaseMs`. A request is admitted only while fewer than `limit` slots are occupied, so
 * every window holds at most `limit` admissions, whoever spent them. Unused leased admissions
 * come back when the isolate hands them back (it may not spend them afterwards).
 *
 * Leased slots alive are capped at `leaseShare × limit` (a lease of fewer than 2 is not worth
 * one): a principal that keeps to `(1 − leaseShare) × limit` in every window is then never
 * refused, however its requests fall on isolates — its plain admissions in a window plus every
 * leased slot alive stay within the limit.
 */
export interface Admission {
  allowed: boolean;
  limit: number;
  /** Admissions left in the window right now (after this one). */
  remaining: number;
  /** Milliseconds until the oldest admission leaves the window and a slot frees (0 if none is held). */
  resetMs: number;
}

/** A lease: `count` admissions (the asking request's own included) to spend within `LEASE_MS`. */
export interface Grant {
  /** Unique across guard restarts, so a late hand-back never frees another lease's slots. */
  id: string;
  count: number;
}

export interface LeasedAdmission extends Admission {
  /** Present when the guard granted a lease instead of a single admission. */
  lease?: Grant;
}

/** How long an isolate may spend a lease, and how many admissions it may ask for at once. */
export const LEASE_MS = 100;
export const LEASE_SIZE = 4;
/** The part of a limit leases may hold at once: 20 %, so a principal within 80 % is never refused. */
const LEASE_SHARE = 0.2;

interface Slot {
  until: number;
  count: number;
  lease?: string;
}

export class SlidingWindow {
  /** Occupied slots, in the order they were taken. */
  private slots: Slot[] = [];
  private latest = Number.NEGATIVE_INFINITY;
  private nextLease = 1;
  private readonly epoch = Math.random().toString(36).slice(2);

  constructor(
    readonly limit: number,
    readonly windowMs = 1_000,
    readonly leaseMs = LEASE_MS,
    readonly leaseShare = LEASE_SHARE,
  ) {}

  /** The clock never steps back here: erring late only refuses sooner. */
  private at(now: number): number {
    this.latest = Math.max(now, this.latest);
    if (this.slots.some((s) => s.until <= this.latest)) this.slots = this.slots.filter((s) => s.until > this.latest);
    return this.latest;
  }

  private sum(leasedOnly: boolean): number {
    let n = 0;
    for (const s of this.slots) if (!leasedOnly || s.lease !== undefined) n += s.count;
    return n;
  }

  private resetMs(now: number): number {
    let first = Number.POSITIVE_INFINITY;
    for (const s of this.slots) first = Math.min(first, s.until);
    return first === Number.POSITIVE_INFINITY ? 0 : first - now;
  }

  /**
   * Admits one request at `at`; with `wantLease` (the isolate is busy with this principal) it may
   * grant up to that many admissions at once, the request's own included.
   */
  admit(at: number, wantLease = 0): LeasedAdmission {
    const now = this.at(at);
    const free = this.limit - this.sum(false);
    if (free <= 0) return { allowed: false, limit: this.limit, remaining: 0, resetMs: this.resetMs(now) };
    const leasable = Math.min(wantLease, free, Math.floor(this.leaseShare * this.limit) - this.sum(true));
    if (leasable >= 2) {
      const id = `${this.epoch}.${this.nextLease++}`;
      this.slots.push({ until: now + this.leaseMs + this.windowMs, count: leasable, lease: id });
      // Remaining as the asking client sees it: the lease's unspent admissions are its to use.
      return { allowed: true, limit: this.limit, remaining: free - 1, resetMs: this.resetMs(now), lease: { id, count: leasable } };
    }
    this.slots.push({ until: now + this.windowMs, count: 1 });
    return { allowed: true, limit: this.limit, remaining: free - 1, resetMs: this.resetMs(now) };
  }

  /** Whether nothing is held at `at`: the window then admits as a new one would. */
  isEmpty(at: number): boolean {
    return this.slots.every((s) => s.until <= at);
  }

  /** Takes back `unused` admissions of lease `id`: its isolate will not spend them. */
  handBack(id: string, unused: number, at: number): void {
    this.at(at);
    const slot = this.slots.find((s) => s.lease === id);
    if (!slot) return;
    slot.count -= Math.min(slot.count, unused);
    if (slot.count === 0) this.slots = this.slots.filter((s) => s !== slot);
  }
}

/** the documented headers (section 5): Reset in whole seconds, at least 1 when nothing is left. */
export function rateLimitHeaders(admission: Admission): Record<string, string> {
  const resetSeconds = Math.ceil(admission.resetMs / 1000);
  return {
    "RateLimit-Limit": String(admission.limit),
    "RateLimit-Remaining": String(admission.remaining),
    "RateLimit-Reset": String(admission.remaining === 0 ? Math.max(1, resetSeconds) : resetSeconds),
  };
}
