/**
 * "At most `limit` admitted in any rolling window of `windowMs`", exactly: each admission holds a
 * slot for `windowMs`, and a request is admitted only while fewer than `limit` are held. Pure: the
 * guard passes its clock in. Memory is O(limit).
 */
export interface Admission {
  allowed: boolean;
  limit: number;
  /** Admissions left in the window right now (after this one). */
  remaining: number;
  /** Milliseconds until the oldest admission leaves the window and a slot frees (0 if none is held). */
  resetMs: number;
}

export class SlidingWindow {
  /** When each held admission leaves the window, oldest first. */
  private until: number[] = [];
  private latest = Number.NEGATIVE_INFINITY;

  constructor(
    readonly limit: number,
    readonly windowMs = 1_000,
  ) {}

  /** Admits one request at `at`, or says when a slot frees. The clock never steps back here: erring late only refuses sooner. */
  admit(at: number): Admission {
    const now = this.at(at);
    const free = this.limit - this.until.length;
    if (free <= 0) return { allowed: false, limit: this.limit, remaining: 0, resetMs: this.until[0]! - now };
    this.until.push(now + this.windowMs);
    return { allowed: true, limit: this.limit, remaining: free - 1, resetMs: this.until[0]! - now };
  }

  private at(now: number): number {
    this.latest = Math.max(now, this.latest);
    let gone = 0;
    while (gone < this.until.length && this.until[gone]! <= this.latest) gone++;
    if (gone > 0) this.until = this.until.slice(gone);
    return this.latest;
  }

  /** Whether nothing is held at `at`: the window then admits as a new one would. */
  isEmpty(at: number): boolean {
    return this.until.every((until) => until <= at);
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
