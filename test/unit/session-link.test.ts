import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SESSION_IDLE_MS, SessionLink, type SessionStub } from "../../src/rpc-sessions/session-link";

/** A callee with `echo` and `fail`: counts the sessions opened and disposed, and the calls each carried. */
function callee() {
  const sessions: { calls: string[]; disposed: boolean; broken: boolean }[] = [];
  const open = async (): Promise<SessionStub> => {
    const session = { calls: [] as string[], disposed: false, broken: false };
    sessions.push(session);
    return {
      async call(method: string, args: unknown[]) {
        if (session.disposed) throw new Error("called on a disposed session");
        if (session.broken) throw new Error("the object restarted");
        session.calls.push(`${method}(${args.join(",")})`);
        if (method === "fail") throw new Error("failed");
        return args[0];
      },
      [Symbol.dispose]() {
        session.disposed = true;
      },
    };
  };
  return { sessions, open };
}

interface Callee {
  echo(value: number): Promise<number>;
  fail(value: number): Promise<number>;
}

describe("calls through an RPC session (src/rpc-sessions/session-link.ts)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("any run of calls opens one session while they come closer than the idle time, each answered, in order (fails on a call a request)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: SESSION_IDLE_MS - 1 }), { minLength: 1, maxLength: 30 }), async (gaps) => {
        const { sessions, open } = callee();
        const link = new SessionLink<Callee>(open);
        for (const [i, gap] of gaps.entries()) {
          await vi.advanceTimersByTimeAsync(gap);
          expect(await link.call("echo", i), `call ${i}'s answer`).toBe(i);
        }
        expect(sessions.length, "sessions opened (billed requests)").toBe(1);
        expect(sessions[0]!.calls, "the calls, in order").toEqual(gaps.map((_, i) => `echo(${i})`));
        await vi.advanceTimersByTimeAsync(SESSION_IDLE_MS);
        expect(sessions[0]!.disposed, "closed once idle").toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it("a failed call closes the session and the next call opens another (a restarted object's stub is broken)", async () => {
    const { sessions, open } = callee();
    const link = new SessionLink<Callee>(open);
    expect(await link.call("echo", 1)).toBe(1);
    sessions[0]!.broken = true;
    await expect(link.call("echo", 2), "the call on the broken session").rejects.toThrow("the object restarted");
    expect(sessions[0]!.disposed, "the broken session let go").toBe(true);
    expect(await link.call("echo", 3), "the next call, on a new session").toBe(3);
    expect(sessions.length, "sessions opened").toBe(2);
    expect(link.opened, "the link's count of sessions opened").toBe(2);
  });

  it("a session is not closed while a call on it is under way, however long it takes", async () => {
    const { sessions } = callee();
    let release: () => void = () => {};
    const link = new SessionLink<Callee>(async () => {
      const session = { calls: [] as string[], disposed: false, broken: false };
      sessions.push(session);
      return {
        call: (_method: string, args: unknown[]) => new Promise((resolve) => (release = () => resolve(args[0]))),
        [Symbol.dispose]: () => {
          session.disposed = true;
        },
      };
    });
    const slow = link.call("echo", 7);
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(5 * SESSION_IDLE_MS);
    expect(sessions[0]!.disposed, "closed while a call was under way").toBe(false);
    release();
    expect(await slow).toBe(7);
    await vi.advanceTimersByTimeAsync(SESSION_IDLE_MS);
    expect(sessions[0]!.disposed, "closed once idle after the call").toBe(true);
  });

  it("a busy link sets one idle timer a second, not one a call (fails before: 200 calls, 200 timers)", async () => {
    const { sessions, open } = callee();
    const link = new SessionLink<Callee>(open);
    const timers = vi.spyOn(globalThis, "setTimeout");
    for (let i = 0; i < 200; i++) {
      await vi.advanceTimersByTimeAsync(1);
      await link.call("echo", i);
    }
    expect(timers.mock.calls.length, "timers set over 200 calls in 200 ms").toBeLessThanOrEqual(2);
    expect(sessions[0]!.disposed, "still open while busy").toBe(false);
    await vi.advanceTimersByTimeAsync(SESSION_IDLE_MS);
    expect(sessions[0]!.disposed, "closed a whole idle time after the last call").toBe(true);
    timers.mockRestore();
  });
});
