import { fnv1a } from "../core/fnv";
import { GROUP_SIZE, groupOf, type MarketConfig } from "../domain/market-config";

/**
 * Where a stream connection lives (docs/streams.md#placement), pure. A connection that names
 * market streams at connect lands on a shard of its markets' group, so each group relay calls
 * only its own group's shards; the five connections per principal are counted by the principal's
 * AccessGuard as leases (src/access/connection-leases.ts), not by any shard's sockets, so nothing
 * needs a principal's connections together.
 */

/** How many shards serve each group, and the general pool for connections that name no market. */
export interface ShardLayout {
  /** The general pool's size. */
  shards: number;
  /** Every group's shard count unless overridden (a shard carries on the order of 1,000 busy subscribers: docs/capacity.md). */
  groupShards: number;
  /** Per group, a different shard count (a busy group gets more). */
  groups: ReadonlyMap<number, number>;
  /** `principal`: every connection in the general pool by its principal, as before groups (the comparison of docs/capacity.md). */
  byPrincipal: boolean;
}

/** Shards per group at most: a group's shards are named and reached by number. */
const MAX_SHARDS_PER_GROUP = 256;

function positiveInteger(text: string | undefined, most: number): number | undefined {
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= most ? n : undefined;
}

/**
 * `STREAM_SHARDS` (the general pool: a count, else 1), `STREAM_GROUP_SHARDS` (`N,group:count,…`:
 * every group's count, else 1, then overrides; what does not read is ignored), `STREAM_PLACEMENT`
 * (`group`, or `principal` for the old placement).
 */
export function shardLayout(env: { STREAM_SHARDS?: string; STREAM_GROUP_SHARDS?: string; STREAM_PLACEMENT?: string }): ShardLayout {
  const groups = new Map<number, number>();
  let groupShards = 1;
  for (const entry of (env.STREAM_GROUP_SHARDS ?? "").split(",")) {
    if (!entry.includes(":")) {
      groupShards = positiveInteger(entry.trim(), MAX_SHARDS_PER_GROUP) ?? groupShards;
      continue;
    }
    const [group, count] = entry.split(":");
    const g = Number(group);
    const n = positiveInteger(count?.trim(), MAX_SHARDS_PER_GROUP);
    if (group?.trim() !== "" && Number.isInteger(g) && g >= 0 && n !== undefined) groups.set(g, n);
  }
  return { shards: positiveInteger(env.STREAM_SHARDS, MAX_SHARDS_PER_GROUP) ?? 1, groupShards, groups, byPrincipal: env.STREAM_PLACEMENT === "principal" };
}

export function shardsOfGroup(layout: ShardLayout, group: number): number {
  return layout.groups.get(group) ?? layout.groupShards;
}

/** The general pool's shard of a principal (FNV-1a of its name, mod N): connections that name no market. */
export function shardOf(principal: string, shards: number): string {
  return `shard-${fnv1a(principal) % Math.max(1, Math.floor(shards) || 1)}`;
}

/** The name of a group's shard `index`. */
export function groupShard(group: number, index: number): string {
  return `group-${group}-shard-${index}`;
}

/** The group a shard serves, or undefined for the general pool. */
export function groupOfShard(shard: string): number | undefined {
  const match = /^group-(\d+)-shard-\d+$/.exec(shard);
  return match ? Number(match[1]) : undefined;
}

/**
 * The group a connection belongs to: the group of most of the markets it names (the first named
 * of them on a tie), or undefined when it names none.
 */
export function groupOfMarkets(markets: readonly Pick<MarketConfig, "ordinal">[]): number | undefined {
  const counts = new Map<number, number>();
  let best: number | undefined;
  for (const market of markets) {
    const group = groupOf(market);
    const n = (counts.get(group) ?? 0) + 1;
    counts.set(group, n);
    if (best === undefined || n > (counts.get(best) ?? 0)) best = group;
  }
  return best;
}

/**
 * The shard of a new connection: a shard of its markets' group, by its principal (FNV-1a, so a
 * group's shards fill evenly over many principals and a test can tell where one lands); the
 * general pool by principal when it names no market or placement is by principal.
 */
export function placeConnection(layout: ShardLayout, principal: string, markets: readonly Pick<MarketConfig, "ordinal">[]): string {
  const group = layout.byPrincipal ? undefined : groupOfMarkets(markets);
  if (group === undefined) return shardOf(principal, layout.shards);
  return groupShard(group, fnv1a(principal) % shardsOfGroup(layout, group));
}

/** Every shard there may be with `markets` markets listed (delisted ones too): the general pool and each group's. */
export function allShards(layout: ShardLayout, markets: number): string[] {
  const names = Array.from({ length: layout.shards }, (_, i) => `shard-${i}`);
  if (layout.byPrincipal) return names;
  const groups = Math.ceil(markets / GROUP_SIZE);
  for (let group = 0; group < groups; group++) for (let i = 0; i < shardsOfGroup(layout, group); i++) names.push(groupShard(group, i));
  return names;
}
