import { groupRelay } from "../core/object-ids";
import type { ProblemResult } from "../core/problem";
import type { RelayOp } from "../groups/messages";
import { PacedOutbox } from "../groups/paced-outbox";
import type { BookTarget } from "../history/book-replay";
import type { ReplayPage } from "../history/market-book-history";
import type { DayFiles } from "../history/market-history";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { groupOf, type MarketConfig } from "../registry/model";
import type { MarketAnswer, MarketQuestion } from "./edge-copies";
import { HostAlarms } from "./host-alarms";
import type { IngestBatch, IngestCommit, IngestResult } from "./ingest";
import { MarketEngine, type NewerConfig, type OrderBookSnapshot } from "./market-engine";
import { scopedSql, tablePrefixOf } from "./market-storage";
import type { MinuteBucket } from "./rolling-window";

export type { NewerConfig, OrderBookSnapshot, OrderBookText, WireTrade } from "./market-engine";

/**
 * The object of one group of markets (docs/design.md#market-hosts): it hosts each of the group's
 * markets' engines (`market-engine.ts`), their tables side by side in its storage under each
 * market's prefix, their alarms on its one alarm, and what they publish on one ordered channel to
 * the group's relay. A market is still its own single writer; what the group shares is the
 * object — a venue's busy objects are its groups, not its markets, and the markets due at a
 * minute's end are one alarm.
 *
 * Every call names its market (the config the caller read from the registry, or its symbol where
 * it has none); the engine is built on first use and rebuilt from storage after an eviction.
 */
export class MarketObject extends MeteredObject {
  private readonly engines = new Map<string, MarketEngine>();
  private readonly alarms: HostAlarms;
  /**
   * The ordered channel to the group's relay: one call in flight, and what the markets send
   * meanwhile goes in the next call (no tick: a quiet market pays no delay).
   */
  private toRelay: PacedOutbox<RelayOp> | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "market");
    this.alarms = new HostAlarms(this.ctx.storage);
  }

  /** The engine of one of the group's markets (public for the tests, which look inside it). */
  engine(symbol: string): MarketEngine {
    let engine = this.engines.get(symbol);
    if (!engine) {
      const { storage } = this.ctx;
      const alarm = this.alarms.of(symbol);
      engine = new MarketEngine({
        env: this.env,
        storage: {
          sql: scopedSql(storage.sql, tablePrefixOf(symbol)),
          transactionSync: (work) => storage.transactionSync(work),
          getAlarm: alarm.getAlarm,
          setAlarm: alarm.setAlarm,
        },
        send: (op) => this.relayOf(op).push(op),
        abort: (reason) => this.ctx.abort(reason),
      });
      this.engines.set(symbol, engine);
    }
    return engine;
  }

  /** The group's relay is the one of its markets' group: named by the first op's market, which every later one shares. */
  private relayOf(op: RelayOp): PacedOutbox<RelayOp> {
    if (!this.toRelay) {
      const market = this.engine(op.symbol).config;
      if (!market) throw new Error(`${op.symbol} sent to its relay before it was loaded`);
      const group = groupOf(market);
      this.toRelay = new PacedOutbox(0, (ops) => groupRelay(this.env, group).relay(ops));
    }
    return this.toRelay;
  }

  ingest(market: MarketConfig, batch: IngestBatch, commit?: IngestCommit): Promise<IngestResult | ProblemResult | NewerConfig> {
    return this.engine(market.symbol).ingest(market, batch, commit);
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
    for (const symbol of this.alarms.take(now)) {
      try {
        await this.engine(symbol).alarm();
      } catch (error) {
        this.alarms.failed(symbol, now);
        failure ??= error;
      }
    }
    await this.alarms.arm();
    if (failure !== undefined) throw failure;
  }
}

meterRequests(MarketObject, [
  "ingest",
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
