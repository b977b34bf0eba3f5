/**
 * A principal's open stream connections as leases, the guard's side (docs/limits.md#stream-connections),
 * pure. Each open connection holds one lease, taken by its shard before the upgrade and returned
 * when it closes; the count is exact whichever shards the connections are on. A lease whose
 * shard died (a restart or a crash closes sockets without a close event) is found out when a
 * connection needs its slot: the guard asks the shards holding leases which they still hold,
 * and drops the others — so a dead shard's leases expire at the next connection that needs them,
 * and cost nothing before that.
 */
export interface ConnectionLease {
  id: string;
  shard: string;
  /** When it was granted (the guard's clock): for the operator's eye only, no rule reads it. */
  at: number;
}

/** Leases a principal may hold at most however it asks: the guard's record stays a few hundred bytes. */
export const MAX_LEASES = 5;

export type LeaseAsk = { granted: true; leases: ConnectionLease[] } | { granted: false; leases: ConnectionLease[] };

/** Grants `lease` if fewer than `limit` are held (a lease already held is granted again, unchanged). */
export function takeLease(held: readonly ConnectionLease[], lease: ConnectionLease, limit: number): LeaseAsk {
  if (held.some((l) => l.id === lease.id)) return { granted: true, leases: [...held] };
  if (held.length >= Math.min(limit, MAX_LEASES)) return { granted: false, leases: [...held] };
  return { granted: true, leases: [...held, lease] };
}

export function returnLease(held: readonly ConnectionLease[], id: string): ConnectionLease[] {
  return held.filter((l) => l.id !== id);
}

/** Per shard, the ids of the leases it holds: whom to ask before refusing. */
export function leasesByShard(held: readonly ConnectionLease[]): Map<string, string[]> {
  const byShard = new Map<string, string[]>();
  for (const lease of held) byShard.set(lease.shard, [...(byShard.get(lease.shard) ?? []), lease.id]);
  return byShard;
}

/**
 * Keeps the leases their shards still hold: `alive` per shard asked (undefined for a shard that
 * did not answer: its leases go too — a shard that cannot answer its guard cannot be serving
 * the connections, and keeping them would lock the client out).
 */
export function keepAlive(held: readonly ConnectionLease[], alive: ReadonlyMap<string, ReadonlySet<string> | undefined>): ConnectionLease[] {
  return held.filter((lease) => !alive.has(lease.shard) || alive.get(lease.shard)?.has(lease.id) === true);
}
