/**
 * An object with no request for this long may be taken out of memory (the platform's rule for an
 * object that could hibernate); what it holds only in memory must be stored well before.
 */
export const IDLE_EVICTION_MS = 10_000;

/**
 * Makes an object's one alarm fire no later than `at`: an alarm already set sooner stays, a later
 * one is brought forward. Objects with several duties on one alarm (a heartbeat, a store, a check)
 * each ask for their time this way.
 *
 * @example
 * await alarmBy(this.ctx.storage, Date.now() + 10_000);
 */
export async function alarmBy(storage: DurableObjectStorage, at: number): Promise<void> {
  const alarm = await storage.getAlarm();
  if (alarm === null || alarm > at) await storage.setAlarm(at);
}
