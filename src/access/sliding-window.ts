/**
 * "At most `limit` admitted in any rolling window of `windowMs`", exactly: the times of the
 * admitted requests still inside the window are kept, oldest first. Memory is O(limit).
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
  private readonly admitted: number[] = [];

  constructor(
    readonly limit: number,
    readonly windowMs = 1_000,
  ) {}

  /** Drops admissions that no window ending at `now` contains: those at or before now − windowMs. */
  private expire(now: number): void {
    let drop = 0;
    while (drop < this.admitted.length && this.admitted[drop]! <= now - this.windowMs) drop += 1;
    if (drop > 0) this.admitted.splice(0, drop);
  }

  admit(at: number): Admission {
    // The log stays sorted even if a caller's clock steps back; erring late only refuses sooner.
    const now = Math.max(at, this.admitted.at(-1) ?? at);
    this.expire(now);
    const allowed = this.admitted.length < this.limit;
    if (allowed) this.admitted.push(now);
    const oldest = this.admitted[0];
    return {
      allowed,
      limit: this.limit,
      remaining: this.limit - this.admitted.length,
      resetMs: oldest === undefined ? 0 : oldest + this.windowMs - now,
    };
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
