import { doublingMs } from "../core/backoff";

/**
 * The sign-in throttle, as pure rules. Each principal (an account, a client address) has one
 * record of failed attempts, kept by its AccessGuard, which decides every attempt alone.
 *
 * An attempt is *reserved* before the password is checked: the reservation counts as a failure
 * at once, and a success takes it back. So concurrent attempts cannot all slip past the check
 * (each sees the ones before it), and an attempt whose outcome is never reported stays counted.
 *
 * - **Per account: progressive delay.** The first {@link ACCOUNT_FREE_FAILURES} failures cost
 *   nothing; after that each attempt must wait 1 s, 2 s, 4 s … after the previous failure,
 *   never more than {@link ACCOUNT_MAX_DELAY_MS}. Anyone can slow a known account down, nobody
 *   can lock it for good: the delay is capped, and it is forgotten
 *   {@link LOGIN_WINDOW_MS} after the last failure. A success clears it.
 * - **Per client address: hard limit.** {@link IP_MAX_FAILURES} failures, then no attempt at all
 *   from that address until {@link LOGIN_WINDOW_MS} after its last failure.
 */
export const LOGIN_WINDOW_MS = 15 * 60_000;
export const ACCOUNT_FREE_FAILURES = 5;
export const ACCOUNT_MAX_DELAY_MS = 5 * 60_000;
export const IP_MAX_FAILURES = 20;

export type LoginScope = "account" | "ip";

export interface LoginAttempts {
  failures: number;
  lastFailureAt: number;
}

export type LoginReservation = { allowed: true; attempts: LoginAttempts } | { allowed: false; retryAfterMs: number };

const NONE: LoginAttempts = { failures: 0, lastFailureAt: 0 };

/** The record as it stands at `now`: failures older than the window are forgotten. */
function current(attempts: LoginAttempts | undefined, now: number): LoginAttempts {
  return attempts && now - attempts.lastFailureAt < LOGIN_WINDOW_MS ? attempts : NONE;
}

/** How long after the last failure the next attempt on an account must wait. */
export function accountDelayMs(failures: number): number {
  if (failures < ACCOUNT_FREE_FAILURES) return 0;
  return doublingMs(failures - ACCOUNT_FREE_FAILURES + 1, 1_000, ACCOUNT_MAX_DELAY_MS);
}

/**
 * Reserves one attempt, or says how long until one may be made.
 *
 * @example
 * const reservation = reserveLogin("account", stored, Date.now());
 * if (reservation.allowed) store(reservation.attempts);
 */
export function reserveLogin(scope: LoginScope, stored: LoginAttempts | undefined, now: number): LoginReservation {
  const attempts = current(stored, now);
  const waitUntil =
    scope === "account"
      ? attempts.lastFailureAt + accountDelayMs(attempts.failures)
      : attempts.failures >= IP_MAX_FAILURES
        ? attempts.lastFailureAt + LOGIN_WINDOW_MS
        : 0;
  if (attempts.failures > 0 && now < waitUntil) return { allowed: false, retryAfterMs: waitUntil - now };
  return { allowed: true, attempts: { failures: attempts.failures + 1, lastFailureAt: now } };
}

/**
 * How a reserved attempt ended, when it did not fail: `success` (the password was right: an
 * account starts afresh, an address gets its reservation back) or `released` (the attempt was
 * refused elsewhere before any password was checked: the reservation is given back).
 */
export type LoginSettlement = "success" | "released";

export function settleLogin(scope: LoginScope, stored: LoginAttempts | undefined, outcome: LoginSettlement, now: number): LoginAttempts {
  if (scope === "account" && outcome === "success") return NONE;
  const attempts = current(stored, now);
  return { ...attempts, failures: Math.max(0, attempts.failures - 1) };
}
