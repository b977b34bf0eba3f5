import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ACCOUNT_FREE_FAILURES,
  ACCOUNT_MAX_DELAY_MS,
  accountDelayMs,
  IP_MAX_FAILURES,
  LOGIN_WINDOW_MS,
  type LoginAttempts,
  type LoginScope,
  reserveLogin,
  settleLogin,
} from "../../src/access/login-throttle";

/** Replays attempts (all failing) at the given times; returns which were allowed. */
function replay(scope: LoginScope, times: number[]) {
  let stored: LoginAttempts | undefined;
  return times.map((now) => {
    const reservation = reserveLogin(scope, stored, now);
    if (reservation.allowed) stored = reservation.attempts;
    return reservation;
  });
}

describe("sign-in throttle rules", () => {
  it("an account: five free failures, then waits of 1 s, 2 s, 4 s … capped at five minutes", () => {
    expect([0, 1, 4, 5, 6, 7, 12, 20, 40].map(accountDelayMs)).toEqual([0, 0, 0, 1_000, 2_000, 4_000, 128_000, ACCOUNT_MAX_DELAY_MS, ACCOUNT_MAX_DELAY_MS]);
    const burst = replay(
      "account",
      Array.from({ length: 40 }, () => 0),
    );
    expect(burst.filter((r) => r.allowed)).toHaveLength(ACCOUNT_FREE_FAILURES);
    expect(burst[5]).toEqual({ allowed: false, retryAfterMs: 1_000 });
  });

  it("nobody can lock an account for good: whatever the attacker does, an attempt is possible within the cap after the last failure, and everything is forgotten after the window", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10 * 60_000 }), { minLength: 1, maxLength: 200 }), (gaps) => {
        let now = 0;
        let stored: LoginAttempts | undefined;
        for (const gap of gaps) {
          now += gap;
          const reservation = reserveLogin("account", stored, now);
          if (reservation.allowed) stored = reservation.attempts;
          else expect(reservation.retryAfterMs).toBeLessThanOrEqual(ACCOUNT_MAX_DELAY_MS);
        }
        expect(reserveLogin("account", stored, stored!.lastFailureAt + ACCOUNT_MAX_DELAY_MS).allowed).toBe(true);
        expect(reserveLogin("account", stored, stored!.lastFailureAt + LOGIN_WINDOW_MS)).toEqual({
          allowed: true,
          attempts: { failures: 1, lastFailureAt: stored!.lastFailureAt + LOGIN_WINDOW_MS },
        });
      }),
    );
  });

  it("a client address: twenty failures, then nothing until fifteen minutes after the last", () => {
    const times = Array.from({ length: IP_MAX_FAILURES + 5 }, (_, i) => i * 1_000);
    const outcomes = replay("ip", times);
    expect(outcomes.filter((r) => r.allowed)).toHaveLength(IP_MAX_FAILURES);
    const last = (IP_MAX_FAILURES - 1) * 1_000;
    expect(outcomes.at(-1)).toEqual({ allowed: false, retryAfterMs: last + LOGIN_WINDOW_MS - times.at(-1)! });
  });

  it("a success clears an account and gives an address its reservation back; a release gives it back everywhere", () => {
    const held = { failures: 4, lastFailureAt: 100 };
    expect(settleLogin("account", held, "success", 200)).toEqual({ failures: 0, lastFailureAt: 0 });
    expect(settleLogin("ip", held, "success", 200)).toEqual({ failures: 3, lastFailureAt: 100 });
    expect(settleLogin("account", held, "released", 200)).toEqual({ failures: 3, lastFailureAt: 100 });
  });
});
