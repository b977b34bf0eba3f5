/**
 * A principal's open stream connections as leases, the guard's side (docs/limits.md#stream-connections),
 * pure. Each open connection holds one lease, taken by its shard before the upgrade and returned
 * when it closes; the count is exact whichever shards the connections are on. A lease whose
 * shard died (a restart or a crash closes sockets without a close event) is found out when a
 * connection needs its slot: the guard asks the shards holding leases which they still hold,
 * and drops the others — so a dead shard's leases expire at the next connection that needs them,
 * and cost nothing before that. A shard that does not answer keeps its leases (the count stays
 * exact) until they were last confirmed `UNANSWERED_LEASE_MS` ago: a shard unreachable that long
 * has lost its clients to their heartbeat watchdogs, and must not lock them out.
 */
export interface ConnectionLease {
  id: string;
  shard: string;
  /** When it was granted or a shard last said it holds it (the guard's clock). */
  at: number;
}

/** A lease whose shard does not answer is kept this long after it was last confirmed. */
export const UNANSWERED_LEASE_MS = 60_000;

/**
 * The holder of connections a Worker isolate keeps itself (the Binance WebSocket API): no shard
 * to ask, so such a lease confirms itself every EDGE_CONFIRM_MS and is kept until
 * UNANSWERED_LEASE_MS after its last confirmation, like a lease whose shard does not answer.
 */
export const EDGE_HOLDER = "edge";
export const EDGE_CONFIRM_MS = 20_000;

/** A held lease confirmed now (unchanged when not held). */
export function confirmLease(held: readonly ConnectionLease[], id: string, now: number): ConnectionLease[] {
  return held.map((lease) => (lease.id === id ? { ...lease, at: now } : lease));
}

/** Leases a principal may hold at most however it asks: the guard's record stays a few hundred bytes. */
export const MAX_LEASES = 5;

export type LeaseAsk = { granted: true; leases: ConnectionLease[] } | { granted: false; leases: ConnectionLease[] };

/** Grants `lease` if fewer than `limit` are held (a lease already held is granted again, unchanged). */
function takeLease(held: readonly ConnectionLease[], lease: ConnectionLease, limit: number): LeaseAsk {
  if (held.some((l) => l.id === lease.id)) return { granted: true, leases: [...held] };
  if (held.length >= Math.min(limit, MAX_LEASES)) return { granted: false, leases: [...held] };
  return { granted: true, leases: [...held, lease] };
}

export function returnLease(held: readonly ConnectionLease[], id: string): ConnectionLease[] {
  return held.filter((l) => l.id !== id);
}

/** Per shard, the ids of the leases it holds: whom to ask before refusing. */
function leasesByShard(held: readonly ConnectionLease[]): Map<string, string[]> {
  const byShard = new Map<string, string[]>();
  for (const lease of held) byShard.set(lease.shard, [...(byShard.get(lease.shard) ?? []), lease.id]);
  return byShard;
}

/**
 * Keeps the leases their shards still hold (confirmed now), per shard asked `alive` (undefined
 * for a shard that did not answer: its leases are kept until `UNANSWERED_LEASE_MS` after their
 * last confirmation).
 */
export function keepAlive(held: readonly ConnectionLease[], alive: ReadonlyMap<string, ReadonlySet<string> | undefined>, now: number): ConnectionLease[] {
  return held.flatMap((lease) => {
    if (!alive.has(lease.shard)) return [lease];
    const ids = alive.get(lease.shard);
    if (ids === undefined) return now - lease.at < UNANSWERED_LEASE_MS ? [lease] : [];
    return ids.has(lease.id) ? [{ ...lease, at: now }] : [];
  });
}

/**
 * The guard's decision on one lease: granted below the limit; at the limit, the shards holding
 * leases are asked (`ask`: the ids still held, undefined when a shard did not answer) and the
 * dead ones dropped before deciding again (`lease.at` is now). `read` gives the leases held now (read again after the
 * asking: leases returned meanwhile are gone). Store the answer's leases.
 */
export async function decideLease(
  read: () => ConnectionLease[],
  lease: ConnectionLease,
  limit: number,
  ask: (shard: string, ids: string[]) => Promise<ReadonlySet<string> | undefined>,
): Promise<LeaseAsk> {
  const first = takeLease(read(), lease, limit);
  if (first.granted) return first;
  const alive = new Map<string, ReadonlySet<string> | undefined>();
  await Promise.all([...leasesByShard(first.leases)].map(async ([shard, ids]) => alive.set(shard, await ask(shard, ids))));
  return takeLease(keepAlive(read(), alive, lease.at), lease, limit);
}
