/**
 * Waiting in one request for work another request started, in an isolate shared by many requests.
 *
 * A request must never await another request's promise: when the request that created it ends
 * first (its client went away), the runtime cancels the continuation, the promise never settles,
 * and the waiting request hangs until it is cancelled as hung — a 500, and for work kept in a
 * module-level field, every later request with it. So the waiter polls a flag the other request
 * sets, on timers of its own (which also keep the runtime from taking it for hung), and gives up
 * at a deadline, after which the work counts as lost.
 */

/** Sleeps on the calling request's own timer: the code's one sleep. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The polling step: from 1 ms, doubling, to at most this (the work waited for takes a few ms). */
const MAX_POLL_MS = 8;

/**
 * Resolves once `done()` is true or `clock()` reaches `deadline`; says which.
 *
 * @example
 * const answered = await pollUntil(() => ask.settled, ask.at + 1_000, Date.now);
 */
export async function pollUntil(done: () => boolean, deadline: number, clock: () => number, wait: (ms: number) => Promise<void> = sleep): Promise<boolean> {
  for (let step = 1; !done() && clock() < deadline; step = Math.min(step * 2, MAX_POLL_MS)) await wait(step);
  return done();
}
