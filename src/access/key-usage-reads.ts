import { accessGuard, keyGate, keyUsageLedger, keyUsageLedgerAt, usageLedgerOf } from "../core/object-ids";
import { logFailure } from "../logs/log";
import type { UsageBucket, UsageInterval } from "./key-usage";
import { isGatedKey, principalOfKey } from "./keys";

/**
 * A key's usage as the dashboard and the operator read it (docs/limits.md#your-keys-usage): its
 * ledger's buckets. An account key's gate
 * hands what it holds to the ledger first, and a publishing key's guard answers once the uses it
 * told the ledger have landed, so a read after a request sees that request.
 *
 * @example
 * const buckets = await keyUsageOf(env, keyId, "1m");
 */
export async function keyUsageOf(env: Env, keyId: string, interval: UsageInterval, since?: number): Promise<UsageBucket[]> {
  // Both, at once: an account key's gate hands over its held counts, a publishing key's guard what it told.
  await Promise.all([handedOver(env, keyId), accessGuard(env, principalOfKey(keyId)).usageTold()]);
  return keyUsageLedger(env, keyId).usage(keyId, interval, since);
}

/**
 * When each key was last admitted: the later of what its guard holds (or stored, once a day) and
 * what its ledger counted. The keys of one ledger share its gate: each gate hands over once and
 * each ledger answers once for all of them (a listing of 20 keys is not 20 gate calls).
 */
export async function keysLastUse(env: Env, keyIds: readonly string[]): Promise<(number | null)[]> {
  const byLedger = new Map<number, string[]>();
  for (const keyId of keyIds) {
    const ledger = usageLedgerOf(keyId);
    byLedger.set(ledger, [...(byLedger.get(ledger) ?? []), keyId]);
  }
  const counted = new Map<string, number | null>();
  const statuses = Promise.all(keyIds.map((keyId) => accessGuard(env, principalOfKey(keyId)).keyStatus()));
  await Promise.all(
    [...byLedger].map(async ([ledger, ids]) => {
      const gated = ids.find((keyId) => isGatedKey(keyId));
      if (gated !== undefined) await handedOver(env, gated);
      const lasts = await keyUsageLedgerAt(env, ledger).lastUses(ids);
      for (const [i, keyId] of ids.entries()) counted.set(keyId, lasts[i] ?? null);
    }),
  );
  return (await statuses).map((status, i) => {
    const uses = [status.lastUsedAt, counted.get(keyIds[i]!) ?? null].filter((at): at is number => at !== null);
    return uses.length > 0 ? Math.max(...uses) : null;
  });
}

/** {@link keysLastUse} of one key. */
export async function keyLastUse(env: Env, keyId: string): Promise<number | null> {
  return (await keysLastUse(env, [keyId]))[0]!;
}

/**
 * An account key's gate has handed its held usage to the ledgers (docs/limits.md#key-gates). One
 * that could not keeps it for its next hand-over: the read answers with what the ledger has.
 */
async function handedOver(env: Env, keyId: string): Promise<void> {
  if (!isGatedKey(keyId)) return;
  await keyGate(env, keyId)
    .handOverUsage()
    .catch((error: unknown) => logFailure("key usage not handed over before a read", { keyId, error }));
}
