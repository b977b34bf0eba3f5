import { streamHub } from "../core/object-ids";
import type { StreamEvent } from "./protocol";

/** Events waiting for one shard, and whether a send to it is under way. */
interface Outbox {
  queued: StreamEvent[];
  sending: boolean;
}

/**
 * The shards a source (a market, the price index) publishes to. Each change goes once to every
 * subscribed shard, which fans out locally.
 *
 * Sends to a shard are batched without a timer: one RPC is in flight per shard, and whatever
 * the source publishes meanwhile goes together in the next one. A quiet market pays no delay;
 * a busy one sends one call per round trip instead of one per update. Order is kept, since a
 * shard's batches leave one after another.
 */
export class ShardPublisher {
  private readonly shards: Set<string>;
  private readonly outboxes = new Map<string, Outbox>();

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

  /** Publishes to `shard` from now on, starting with `welcome` (e.g. the base book), in order. */
  async add(shard: string, welcome: StreamEvent[] = []): Promise<void> {
    const known = this.shards.has(shard);
    this.shards.add(shard);
    this.enqueue(shard, welcome);
    if (!known) await this.persist([...this.shards]);
  }

  async remove(shard: string): Promise<void> {
    if (!this.shards.delete(shard)) return;
    this.outboxes.delete(shard);
    await this.persist([...this.shards]);
  }

  publish(events: StreamEvent[]): void {
    if (events.length === 0) return;
    for (const shard of this.shards) this.enqueue(shard, events);
  }

  private enqueue(shard: string, events: StreamEvent[]): void {
    if (events.length === 0) return;
    let outbox = this.outboxes.get(shard);
    if (!outbox) this.outboxes.set(shard, (outbox = { queued: [], sending: false }));
    outbox.queued.push(...events);
    if (!outbox.sending) this.ctx.waitUntil(this.drain(shard, outbox));
  }

  private async drain(shard: string, outbox: Outbox): Promise<void> {
    outbox.sending = true;
    try {
      // Stops when the shard was removed meanwhile (its outbox is no longer the current one).
      while (outbox.queued.length > 0 && this.outboxes.get(shard) === outbox) {
        const batch = outbox.queued;
        outbox.queued = [];
        try {
          await streamHub(this.env, shard).publish(batch);
        } catch (error) {
          // Lost events: the shard sees the book's sequence jump and rebuilds its copy.
          console.error("publish to", shard, "failed", String(error));
        }
      }
    } finally {
      outbox.sending = false;
    }
  }
}
