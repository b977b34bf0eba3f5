import { ensureRegistry } from "../registry/copy";
import { allShards, shardLayout } from "./placement";

/** Every shard's name for whatever must reach all of them (a status, a close, a scrape): the general pool and each group's. */
export async function everyShard(env: Env): Promise<string[]> {
  const registry = await ensureRegistry(env);
  return allShards(shardLayout(env), registry.snapshot.markets.length);
}
