import { priceIndex, streamHub } from "../core/object-ids";
import { SessionLink, type SessionStub, sessionIdleMs } from "../rpc-sessions/session-link";
import type { StreamEvent } from "../streams/protocol";
import type { MarketSummary, RelayOp } from "./messages";
import { PacedOutbox } from "./paced-outbox";

/** A relay calls the price index at most this often (docs/design.md#group-relays). */
const RELAY_TICK_MS = 100;
/** Shards are called at most this often: with the markets' own 100 ms conflation, a change waits at most about 150 ms in all. */
const SHARD_TICK_MS = 50;

const SUBS_PREFIX = "subs:";

/** What a relay calls on a shard's session and on the price index's (their classes name them). */
interface ShardCalls {
  publish(events: StreamEvent[]): Promise<void>;
}
interface PriceIndexCalls {
  reportSummaries(summaries: MarketSummary[]): Promise<void>;
}

/**
 * The relay of one group of up to 64 markets (docs/design.md#group-relays), inside the object
 * that hosts them. Its markets hand it their stream events and summaries in order; it forwards
 * them in one batch per 50 ms to each shard subscribed to any of them, and its markets' summaries
 * per 100 ms to the price index, so the calls into every shared object are bounded by groups ×
 * ticks, not by markets × updates.
 *
 * Which shards want which market is kept in the host's storage, so a host woken after eviction
 * goes on forwarding; events in flight at an eviction are lost like a failed call, and a shard
 * that sees a book sequence jump asks its market for a new base.
 */
export class GroupRelay {
  /** Per market, the shards subscribed to its streams. */
  private readonly subscribers = new Map<string, Set<string>>();
  private readonly toShards = new Map<string, PacedOutbox<StreamEvent>>();
  private readonly toPriceIndex: PacedOutbox<MarketSummary>;
  /** Calls made to each shard since this relay woke (one entry per shard it knows: bounded like `toShards`). */
  readonly callsTo = new Map<string, number>();
  /** Its sessions' idle time (SESSION_IDLE_MS; a test may set it before the first event). */
  sessionIdleMs: number;

  constructor(
    private readonly kv: SyncKvStorage,
    private readonly env: Env,
  ) {
    for (const [key, shards] of kv.list<string[]>({ prefix: SUBS_PREFIX })) {
      this.subscribers.set(key.slice(SUBS_PREFIX.length), new Set(shards));
    }
    this.sessionIdleMs = sessionIdleMs(env);
    let index: SessionLink<PriceIndexCalls> | undefined;
    this.toPriceIndex = new PacedOutbox(RELAY_TICK_MS, (summaries) => {
      index ??= this.link(() => priceIndex(env).openSession());
      return index.call("reportSummaries", latestPerMarket(summaries));
    });
  }

  private outboxOf(shard: string): PacedOutbox<StreamEvent> {
    let outbox = this.toShards.get(shard);
    if (!outbox) {
      const link = this.link<ShardCalls>(() => streamHub(this.env, shard).openSession());
      const send = (events: StreamEvent[]) => {
        this.callsTo.set(shard, (this.callsTo.get(shard) ?? 0) + 1);
        return link.call("publish", events);
      };
      this.toShards.set(shard, (outbox = new PacedOutbox(SHARD_TICK_MS, send)));
    }
    return outbox;
  }

  private persist(symbol: string, shards: Set<string>): void {
    if (shards.size === 0) {
      this.subscribers.delete(symbol);
      this.kv.delete(SUBS_PREFIX + symbol);
    } else this.kv.put(SUBS_PREFIX + symbol, [...shards]);
  }

  /** A market's ops, applied in the order it sent them. */
  relay(ops: RelayOp[]): void {
    for (const op of ops) {
      if ("events" in op) {
        for (const shard of this.subscribers.get(op.symbol) ?? []) this.outboxOf(shard).push(...op.events);
      } else if ("join" in op) {
        const shards = this.subscribers.get(op.symbol) ?? new Set();
        shards.add(op.join);
        this.subscribers.set(op.symbol, shards);
        this.persist(op.symbol, shards);
        this.outboxOf(op.join).push(...op.welcome);
      } else if ("leave" in op) {
        const shards = this.subscribers.get(op.symbol);
        if (shards?.delete(op.leave)) this.persist(op.symbol, shards);
      } else this.toPriceIndex.push(op.summary);
    }
  }

  /** A session into a shard or the price index: its calls, a tick each, are one billed request (`../rpc-sessions/`). */
  private link<T>(open: () => Promise<SessionStub>): SessionLink<T> {
    return new SessionLink<T>(open, this.sessionIdleMs);
  }

  /** Sends everything queued now, without waiting for the tick (tests count calls this way). */
  async flush(): Promise<void> {
    await Promise.all([this.toPriceIndex.flush(), ...[...this.toShards.values()].map((outbox) => outbox.flush())]);
  }
}

/** A market's summaries of one tick: only the latest counts. */
function latestPerMarket(summaries: MarketSummary[]): MarketSummary[] {
  return [...new Map(summaries.map((s) => [s.symbol, s])).values()];
}
