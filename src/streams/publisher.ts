import type { Env } from "../env";
import type { StreamEvent } from "./stream-hub";

/**
 * The shards a source (a market, the price index) publishes to. Each change goes once to every
 * subscribed shard, which fans out locally. Sends to one shard are chained, so a shard sees a
 * market's messages in the order the market produced them.
 */
export class ShardPublisher {
  private readonly shards: Set<string>;
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly env: Env,
    private readonly ctx: DurableObjectState,
    initial: readonly string[],
    private readonly persist: (shards: string[]) => void | Promise<void>,
  ) {
    this.shards = new Set(initial);
  }

  get size(): number {
    return this.shards.size;
  }

  list(): string[] {
    return [...this.shards];
  }

  async add(shard: string): Promise<void> {
    if (this.shards.has(shard)) return;
    this.shards.add(shard);
    await this.persist([...this.shards]);
  }

  async remove(shard: string): Promise<void> {
    if (!this.shards.delete(shard)) return;
    this.chains.delete(shard);
    await this.persist([...this.shards]);
  }

  publish(events: StreamEvent[]): void {
    if (events.length === 0) return;
    for (const shard of this.shards) {
      const previous = this.chains.get(shard) ?? Promise.resolve();
      const next = previous
        .then(() => this.env.STREAM_HUB.getByName(shard).publish(events))
        .catch((error: unknown) => console.error("publish to", shard, "failed", String(error)));
      this.chains.set(shard, next);
      this.ctx.waitUntil(next);
    }
  }
}
