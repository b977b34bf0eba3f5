/**
 * Waits for something to happen: polls `read` until it gives a value (not `undefined` or
 * `false`), and fails naming `what` if that takes longer than `timeoutMs`. The one polling helper
 * of the suite, for workerd and Node tests alike: it waits for an event, never for a window of
 * time to pass.
 *
 * @example
 * const ack = await until(() => socket.messages.find((m) => m.result), { what: "the subscribe ack" });
 */
export async function until<T>(
  read: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  { timeoutMs = 5000, intervalMs = 20, what = "the condition" }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
