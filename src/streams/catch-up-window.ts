import { randomHex } from "../core/encoding";

/**
 * A catch-up's windows (docs/streams.md#from-any-moment): what a client is sent before it says
 * `{"op":"more"}`. A window is earned by reading the last: each `paused` message carries a fresh
 * token, and only a `more` naming it opens the next window — a client that sends `more` without
 * reading cannot know it, so the shard never holds more than a window for it, however it asks.
 */

/** What a client is sent of its catch-up before it says `{"op":"more"}`: what the runtime may hold for it. */
export const CATCH_UP_WINDOW_BYTES = 256 * 1024;

/**
 * A catch-up's pace, per connection: a window starts no sooner than CATCH_UP_WINDOW_BYTES at this
 * rate after the one before it began (a second), however fast the client answers — so five
 * catch-ups, an address's most, read at most 1.25 MiB a second of history between them, and the
 * shard's thread serves live subscribers between windows (docs/streams.md#from-any-moment; at
 * 512 KiB a second five catch-ups beside a busy market took its acknowledgements ×1.66 at p99).
 */
export const CATCH_UP_BYTES_PER_SECOND = 256 * 1024;

/** How long a `more` waits before its window, the last having begun at `windowAt`. */
export function paceWait(windowAt: number, now: number): number {
  return Math.max(0, windowAt + (CATCH_UP_WINDOW_BYTES * 1000) / CATCH_UP_BYTES_PER_SECOND - now);
}

/** The token of a new pause: 16 hex digits, not to be guessed. */
export function pauseToken(): string {
  return randomHex(8);
}

/**
 * Why a `more` earns no window, or undefined when it earns one: `expected` is the token of the
 * pause the client was last sent (undefined while a window is still being sent).
 */
export function moreRefusal(expected: string | undefined, given: string | undefined): string | undefined {
  if (expected === undefined) return "a window is being sent: more takes the token of the paused message that ends it";
  if (given !== expected) return "more takes the token of the last paused message: a window is earned by reading the last (docs/streams.md#from-any-moment)";
  return undefined;
}
