import { accessGuard, keyGate, keyUsageLedger } from "../core/object-ids";
import type { UsageBucket, UsageInterval } from "./key-usage";
import { isGatedKey, principalOfKey } from "./keys";
import { sumBuckets } from "./usage-ledger";

/**
 * A key's usage as the dashboard and the operator read it (docs/limits.md#your-keys-usage): its
 * ledger's buckets, with what its guard stored before the ledger counted. An account key's gate
 * hands what it holds to the ledger first, and a publishing key's guard answers once the uses it
 * told the ledger have landed, so a read after a request sees that request.
 *
 * @example
 * const buckets = await keyUsageOf(env, keyId, "1m");
 */
export async function keyUsageOf(env: Env, keyId: string, interval: UsageInterval, since?: number): Promise<UsageBucket[]> {
  await handedOver(env, keyId);
  const kept = await accessGuard(env, principalOfKey(keyId)).keyUsage(interval, since);
  return sumBuckets(kept, await keyUsageLedger(env, keyId).usage(keyId, interval, since));
}

/** When a key was last admitted: the later of what its guard holds (or stored, once a day) and what its ledger counted. */
export async function keyLastUse(env: Env, keyId: string): Promise<number | null> {
  await handedOver(env, keyId);
  const [status, counted] = await Promise.all([accessGuard(env, principalOfKey(keyId)).keyStatus(), keyUsageLedger(env, keyId).lastUse(keyId)]);
  const uses = [status.lastUsedAt, counted].filter((at): at is number => at !== null);
  return uses.length > 0 ? Math.max(...uses) : null;
}

/**
 * An account key's gate has handed its held usage to the ledgers (docs/limits.md#key-gates). One
 * that could not keeps it for its next hand-over: the read answers with what the ledger has.
 */
async function handedOver(env: Env, keyId: string): Promise<void> {
  if (!isGatedKey(keyId)) return;
  await keyGate(env, keyId)
    .handOverUsage()
    .catch((error: unknown) => console.error("key usage not handed over before a read", keyId, String(error)));
}
