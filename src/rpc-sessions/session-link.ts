import { msSetting } from "../core/settings";

/**
 * A session unused this long is closed (SESSION_IDLE_MS): while open it is a request under way at
 * its object (which cannot hibernate or be evicted meanwhile) and at its caller. A busy caller
 * keeps it; a quiet one lets both go within a second.
 */
export const SESSION_IDLE_MS = 1_000;

/** The idle time of `env` (SESSION_IDLE_MS). */
export function sessionIdleMs(env: Env): number {
  return msSetting(env.SESSION_IDLE_MS, SESSION_IDLE_MS);
}

/** The caller's side of an `ObjectSession` (its RPC stub). */
export interface SessionStub {
  call(method: string, args: unknown[]): Promise<unknown>;
  [Symbol.dispose]?(): void;
}

/** The methods of `T` a session may carry, with their arguments and answers. */
type Method<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T] & string;
type Args<T, K extends Method<T>> = T[K] extends (...args: infer A) => unknown ? A : never;
type Answer<T, K extends Method<T>> = T[K] extends (...args: never[]) => infer R ? Awaited<R> : never;

/**
 * Calls into one object through one RPC session (`object-session.ts`), opened on the first call —
 * the one billed request — and kept: later calls ride on it, in the order they are made (one
 * stub: E-order). A failed call closes it (its stub may be broken: the object restarted, the
 * connection dropped) and the next call opens another from a fresh stub; a session idle for
 * `idleMs` with no call under way is closed, so an object whose callers went quiet may hibernate.
 *
 * @example
 * const link = new SessionLink<StreamHub>(() => streamHub(env, shard).openSession());
 * await link.call("publish", events);
 */
export class SessionLink<T> {
  private session: Promise<SessionStub> | undefined;
  /** The session's stub once opened: a call then goes out in its caller's turn, not a microtask later. */
  private stub: SessionStub | undefined;
  private underWay = 0;
  /** When the last call under way ended: the idle timer closes the session once it is `idleMs` past this. */
  private idleSince = 0;
  /**
   * At most one timer a link, armed when calls stop and moved on when it fires early: a timer
   * cleared and set again on every call was a tenth of a busy channel's own CPU (docs/benchmarks.md#one-channel).
   */
  private idle: ReturnType<typeof setTimeout> | undefined;
  /** Sessions opened so far (the billed requests). */
  opened = 0;

  constructor(
    private readonly open: () => Promise<SessionStub>,
    private readonly idleMs = SESSION_IDLE_MS,
  ) {}

  async call<K extends Method<T>>(method: K, ...args: Args<T, K>): Promise<Answer<T, K>> {
    if (!this.session) {
      this.opened += 1;
      const opening = this.open();
      this.session = opening;
      opening.then(
        (stub) => {
          if (this.session === opening) this.stub = stub;
        },
        () => {},
      );
    }
    const session = this.session;
    this.underWay += 1;
    try {
      const stub = this.stub ?? (await session);
      return (await stub.call(method, args)) as Answer<T, K>;
    } catch (error) {
      if (this.session === session) this.close();
      throw error;
    } finally {
      this.underWay -= 1;
      if (this.underWay === 0 && this.session === session) {
        this.idleSince = Date.now();
        if (this.idle === undefined) this.idle = setTimeout(() => this.whenIdle(), this.idleMs);
      }
    }
  }

  /** The idle timer: closes the session if no call came since it was armed, else waits out the rest. */
  private whenIdle(): void {
    this.idle = undefined;
    // A call under way arms it again when it ends.
    if (!this.session || this.underWay > 0) return;
    const left = this.idleSince + this.idleMs - Date.now();
    if (left > 0) this.idle = setTimeout(() => this.whenIdle(), left);
    else this.close();
  }

  /** Ends the session (its object may hibernate); the next call opens another. */
  close(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
    const session = this.session;
    this.session = undefined;
    this.stub = undefined;
    session?.then(
      (stub) => stub[Symbol.dispose]?.(),
      () => {},
    );
  }
}
