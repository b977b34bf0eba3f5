import type { ProblemBody } from "./errors.js";

/** Time as the client sees it; tests inject a fake one. */
export interface Clock {
  /** Unix ms. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface BackoffOptions {
  /** Delay before the first retry, before jitter (ms). */
  baseMs: number;
  /** Cap of the delay (ms). */
  maxMs: number;
  /** Uniform in [0, 1); `Math.random` unless a test injects one. */
  random: () => number;
}

/**
 * Exponential back-off with jitter: the `attempt`-th retry (1-based) waits a uniform share between
 * half and all of `min(maxMs, baseMs · 2^(attempt−1))`, so clients that failed together do not
 * come back together, and no wait exceeds `maxMs`.
 *
 * @example
 * backoffDelay(3, { baseMs: 250, maxMs: 8000, random: () => 0.5 }) // 750 (between 500 and 1000)
 */
export function backoffDelay(attempt: number, { baseMs, maxMs, random }: BackoffOptions): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling * (0.5 + random() / 2));
}

/**
 * The wait before a stream's `attempt`-th reconnect (1-based): uniform over all of
 * `[0, min(maxMs, baseMs · 2^(attempt−1))]` ("full jitter"). When a restart drops every
 * connection at once, a million clients come back spread evenly over the first second (then two,
 * then four …) instead of together, and none waits longer than `maxMs` once the service is back.
 *
 * @example
 * reconnectDelay(1, { baseMs: 1000, maxMs: 5000, random: Math.random }) // 0 … 1000
 */
export function reconnectDelay(attempt: number, { baseMs, maxMs, random }: BackoffOptions): number {
  return Math.round(Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1)) * random());
}

/** A stream's reconnect back-off unless the caller sets its own: 1 s doubling to 5 s (docs/streams.md#reconnecting). */
export const RECONNECT_BACKOFF = { baseMs: 1000, maxMs: 5000 } as const;

/**
 * How long an answer asks the client to wait (ms): the problem's exact `retryAfterMs` when it
 * has one, else `Retry-After` (seconds, or an HTTP date), else undefined.
 */
export function retryAfterMs(headers: Headers, problem: ProblemBody | undefined, now: number): number | undefined {
  if (typeof problem?.retryAfterMs === "number" && problem.retryAfterMs >= 0) return problem.retryAfterMs;
  const header = headers.get("Retry-After");
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The last `RateLimit-*` a scope's answers carried, with the moment its window frees a slot. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix ms (client clock) when a slot is free again. */
  resetAt: number;
}

/**
 * Paces requests by what the service says: after an answer with `RateLimit-Remaining: 0`, or a
 * 429, the next request of that scope (public per address, signed per key) waits until the
 * window frees a slot instead of spending a request on a certain refusal. Requests in flight
 * count against what remains, so concurrent calls do not all go out on one free slot.
 */
export class RateLimitPacer {
  private readonly scopes = new Map<string, RateLimitState>();

  constructor(private readonly clock: Clock) {}

  state(scope: string): RateLimitState | undefined {
    const state = this.scopes.get(scope);
    return state && { ...state };
  }

  /** Waits until a request of this scope may go out, and counts it as spent. */
  async ready(scope: string): Promise<void> {
    for (;;) {
      const state = this.scopes.get(scope);
      if (!state) return;
      const now = this.clock.now();
      if (now >= state.resetAt && state.remaining <= 0) state.remaining = 1; // the window moved on: probe it
      if (state.remaining > 0) {
        state.remaining -= 1;
        return;
      }
      await this.clock.sleep(state.resetAt - now);
    }
  }

  /** Records an answer's `RateLimit-*` headers (answers without them change nothing). */
  observe(scope: string, headers: Headers): void {
    const limit = Number(headers.get("RateLimit-Limit"));
    const remaining = Number(headers.get("RateLimit-Remaining"));
    const reset = Number(headers.get("RateLimit-Reset"));
    if (!headers.has("RateLimit-Remaining") || !Number.isFinite(remaining) || !Number.isFinite(reset)) return;
    this.scopes.set(scope, { limit, remaining, resetAt: this.clock.now() + reset * 1000 });
  }

  /** After a refusal: nothing goes out in this scope for `waitMs`. */
  refuse(scope: string, waitMs: number): void {
    const state = this.scopes.get(scope) ?? { limit: 0, remaining: 0, resetAt: 0 };
    this.scopes.set(scope, { ...state, remaining: 0, resetAt: this.clock.now() + waitMs });
  }
}
