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
