import type { ProblemResult } from "../core/problem";
import { GroupRelay } from "../groups/group-relay";
import type { BookTarget } from "../history/book-replay";
import type { ReplayPage } from "../history/market-book-history";
import type { DayFiles } from "../history/market-history";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import type { MarketConfig } from "../registry/model";
import { ObjectSession } from "../sessions/object-session";
import { GroupJournal } from "../ticks/journal";
import { Tick } from "../ticks/tick";
import type { MarketAnswer, MarketQuestion } from "./edge-copies";
import { HostAlarms } from "./host-alarms";
import type { IngestAnswer, IngestBatch, IngestCommit, IngestItem } from "./ingest";
import { MarketEngine, type OrderBookSnapshot } from "./market-engine";
import { scopedSql, tablePrefixOf } from "./market-storage";
import type { MinuteBucket } from "./rolling-window";
import { COMMIT_MAX_BYTES } from "./staged-batches";

export type { OrderBookSnapshot, OrderBookText, WireTrade } from "./market-engine";

/**
 * The object of one group of markets (docs/design.md#market-hosts): it hosts each of the group's
 * markets' engines (`market-engine.ts`), their tables side by side in its storage under each
 * market's prefix, their commits in one journal row a tick, their alarms on its one alarm, and
 * the group's relay, which takes what they publish. A market is still its own single writer; what
 * the group shares is the object — a venue's busy objects are its groups, not its markets, a
 * group's tick is one row, and the markets due at a minute's end are one alarm.
 *
 * Every call names its market (the config the caller read from the registry, or its symbol where
 * it has none); the engine is built on first use and rebuilt from storage after an eviction.
 */
export class MarketObject extends MeteredObject {
  private readonly engines = new Map<string, MarketEngine>();
  private readonly alarms: HostAlarms;
  /** What the group's markets publish goes through it to the shards and the price index (docs/design.md#group-relays). */
  readonly relay: GroupRelay;
  /** The group's commits: one row a tick for all its markets' records (`../ticks/journal.ts`). */
  private readonly journal: GroupJournal;
  /** The tick's length (`INGEST_TICK_MS`, 100 ms; the workers tests commit each batch at once unless a test sets it). */
  tickMs: number;
  private readonly tick: Tick;
  /** About the bytes the tick's row will hold (`batchBytes` of each batch staged). */
  private stagedBytes = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "market");
    this.alarms = new HostAlarms(this.ctx.storage);
    this.relay = new GroupRelay(this.ctx.storage.kv, env);
    this.journal = new GroupJournal(this.ctx.storage.sql);
    this.tickMs = Number(env.INGEST_TICK_MS ?? "100");
    this.tick = new Tick(
      () => this.tickMs,
      () => this.commit(),
    );
  }

  /** The engine of one of the group's markets (public for the tests, which look inside it). */
  engine(symbol: string): MarketEngine {
    let engine = this.engines.get(symbol);
    if (!engine) {
      const { storage } = this.ctx;
      engine = new MarketEngine({
        env: this.env,
        storage: {
          sql: scopedSql(storage.sql, tablePrefixOf(symbol)),
          transactionSync: (work) => storage.transactionSync(work),
          ...this.alarms.of(symbol),
          ring: this.journal.ringOf(symbol),
        },
        send: (op) => this.relay.relay([op]),
        tick: this.tick,
        roomFor: (bytes) => this.roomFor(bytes),
      });
      this.engines.set(symbol, engine);
    }
    return engine;
  }

  /** A tick's row stays within a value's size: what is staged is committed first when `bytes` more would take it past. */
  private roomFor(bytes: number): void {
    if (this.stagedBytes > 0 && this.stagedBytes + bytes > COMMIT_MAX_BYTES) this.tick.commitNow();
    this.stagedBytes += bytes;
  }

  /**
   * The group's commit (docs/design.md#the-write-path): every market's staged batches in one
   * transaction, their records one row of the journal — a market whose oldest record that row
   * would overwrite writes a snapshot first. The batches are answered once it is durable. A
   * storage fault restarts the object from storage, and every batch of the tick gets the error
   * (none was acknowledged).
   */
  private commit(): void {
    this.stagedBytes = 0;
    const after: (() => void)[] = [];
    try {
      this.ctx.storage.transactionSync(() => {
        for (const engine of this.engines.values()) if (engine.staging) after.push(engine.commitStaged());
        if (this.journal.staged) for (const symbol of this.journal.dueForCover()) after.push(this.engine(symbol).coverJournal());
        this.journal.write();
      });
    } catch (error) {
      this.journal.discard();
      this.ctx.abort(`ingest failed to persist: ${String(error)}`);
      throw error;
    }
    for (const next of after) next();
  }

  ingest(market: MarketConfig, batch: IngestBatch, commit?: IngestCommit): Promise<IngestAnswer> {
    return this.engine(market.symbol).ingest(market, batch, commit);
  }

  /**
   * A publisher channel's batches for the group's markets, gathered into one call
   * (`../publish/host-calls.ts`): staged in the order given, each answered once its tick is written.
   */
  ingestAll(items: IngestItem[]): Promise<IngestAnswer[]> {
    return Promise.all(items.map(({ market, batch, commit }) => this.engine(market.symbol).ingest(market, batch, commit)));
  }

  /** A publisher channel's session into the group (`../sessions/`): its gathered calls ride on it, one billed request. */
  openSession(): ObjectSession<MarketObject> {
    return new ObjectSession<MarketObject>(this, ["ingestAll"]);
  }

  importMinutes(market: MarketConfig, minutes: MinuteBucket[]): { imported: number; replaced: number } | ProblemResult {
    return this.engine(market.symbol).importMinutes(market, minutes);
  }

  bookAt(market: MarketConfig, target: BookTarget, depth: number): Promise<{ text: string; sequence: number; final: boolean } | ProblemResult> {
    return this.engine(market.symbol).bookAt(market, target, depth);
  }

  bookReplay(market: MarketConfig, from: number, to: number, after?: number): Promise<ReplayPage | ProblemResult> {
    return this.engine(market.symbol).bookReplay(market, from, to, after);
  }

  /** Writes the closed hours' book files due at `now` (the tests call it with a later clock). */
  writeBookHours(symbol: string, now?: number): Promise<number[]> {
    return this.engine(symbol).writeBookHours(now);
  }

  orderBook(market: MarketConfig, depth: number): OrderBookSnapshot | ProblemResult {
    return this.engine(market.symbol).orderBook(market, depth);
  }

  /** Moves due chunks of a market's old trades to R2 (the tests call it to move them now). */
  archiveTrades(symbol: string, now?: number, most?: number): Promise<number> {
    return this.engine(symbol).archiveTrades(now, most);
  }

  writeDay(market: MarketConfig, day: number): Promise<DayFiles | ProblemResult> {
    return this.engine(market.symbol).writeDay(market, day);
  }

  answer(market: MarketConfig, question: MarketQuestion): Promise<MarketAnswer> {
    return this.engine(market.symbol).answer(market, question);
  }

  configure(market: MarketConfig): void {
    this.engine(market.symbol).configure(market);
  }

  subscribeShard(market: MarketConfig, shard: string): void {
    this.engine(market.symbol).subscribeShard(market, shard);
  }

  unsubscribeShard(market: MarketConfig, shard: string): void {
    this.engine(market.symbol).unsubscribeShard(market, shard);
  }

  /** The markets whose alarms are due run in turn; a failure is retried (the first is thrown once the others ran). */
  override async alarm(): Promise<void> {
    const now = Date.now();
    let failure: unknown;
    // The markets' next alarms are one write of the record, at the end (`HostAlarms.running`).
    await this.alarms.running(async () => {
      for (const symbol of this.alarms.take(now)) {
        try {
          await this.engine(symbol).alarm();
        } catch (error) {
          this.alarms.failed(symbol, now);
          failure ??= error;
        }
      }
    });
    if (failure !== undefined) throw failure;
  }
}

meterRequests(MarketObject, [
  "ingest",
  "ingestAll",
  "openSession",
  "importMinutes",
  "orderBook",
  "archiveTrades",
  "writeDay",
  "bookAt",
  "bookReplay",
  "writeBookHours",
  "answer",
  "configure",
  "subscribeShard",
  "unsubscribeShard",
  "alarm",
]);
