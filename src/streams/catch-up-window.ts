import { randomHex } from "../core/encoding";

/**
 * A catch-up's windows (docs/streams.md#from-any-moment): what a client is sent before it says
 * `{"op":"more"}`. A window is earned by reading the last: each `paused` message carries a fresh
 * token, and only a `more` naming it opens the next window — a client that sends `more` without
 * reading cannot know it, so the shard never holds more than a window for it, however it asks.
 */

/** What a client is sent of its catch-up before it says `{"op":"more"}`: what the runtime may hold for it. */
export const CATCH_UP_WINDOW_BYTES = 256 * 1024;

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
