import { evictDurableObject } from "cloudflare:test";

/**
 * Evicts an object once nothing holds it. A market host's background calls — a summary to the
 * price index, a segment to R2 — may be under way when a test asks, and the runtime's eviction
 * gives up on an object with an active reference after a few seconds rather than wait for them:
 * the eviction is asked again, at most `attempts` times, only for that reason.
 *
 * @example
 * await evictWhenIdle(await hostOf("BTCUSDT"));
 */
export async function evictWhenIdle(object: DurableObjectStub, attempts = 5): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await evictDurableObject(object);
    } catch (error) {
      if (attempt >= attempts || !String(error).includes("active references")) throw error;
    }
  }
}
