import { ProblemError, type ProblemResult, problem, toProblemResult } from "../core/problem";
import { withTimeout } from "../core/time-limit";
import type { MarketAnswer, MarketQuestion } from "../domain/market-answer";
import { groupOf, type MarketConfig } from "../domain/market-config";
import type { MinuteBucket } from "../domain/rolling-window";
import { GroupRelay } from "../groups/group-relay";
import type { BookTarget, ReplayLimits, ReplayPage } from "../history/book-replay";
import type { DayOpened, DayPage } from "../history/daily-files";
import { HistoryCache } from "../history/history-cache";
import { logFailure } from "../logs/log";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { ObjectSession } from "../rpc-sessions/object-session";
import { GroupWriter } from "../writes/group-writer";
import { HostAlarms } from "../writes/host-alarms";
import { HostStorage } from "../writes/host-storage";
import { scopedSql, tablePrefixOf } from "../writes/market-storage";
import { openSegments } from "../writes/open-segments";
import type { CheckedIngestItem, IngestAnswer, IngestCommit } from "./ingest";
import { type CheckAtHost, checkedAtHost, type IngestBatch } from "./ingest-check";
import { decodeIngestBatch, decodeIngestCall } from "./ingest-wire";
import { MarketEngine, type OrderBookSnapshot } from "./market-engine";
import { type HeldMarket, Quarantine } from "./quarantine";

export type { OrderBookSnapshot, WireTrade } from "./market-engine";

/** A market's alarm is given up after this long: its R2 and Workflow calls wait no longer in the others' way. */
const MARKET_ALARM_MS = 15_000;
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
  /** What the group writes and in which order: its tick, its journal, its commit (`../writes/group-writer.ts`). */
  readonly writer: GroupWriter;
  /** The tick's length (`INGEST_TICK_MS`, 100 ms; the workers tests commit each batch at once unless a test sets it). */
  tickMs: number;
  /** How long one market's alarm may run before the host stops waiting for it (docs/design.md#isolation). */
  alarmTimeoutMs = MARKET_ALARM_MS;
  /** Its markets' open segments decoded and final history answers, bounded in bytes (docs/history.md#book-history). */
  private readonly historyCache = new HistoryCache();
  /** Its markets' open book segments as their R2 text, bounded in bytes: a segment's close joins, never reads back (`../writes/open-segments.ts`). */
  private readonly openSegments = openSegments();
  /** Its SQLite against Cloudflare's 10 GB an object (public for the tests, which make the limit small). */
  readonly storage: HostStorage;
  /** The group's markets that failed to load, stage or commit: each held alone (docs/design.md#isolation). */
  readonly quarantine = new Quarantine();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "market");
    this.alarms = new HostAlarms(this.ctx.storage);
    this.relay = new GroupRelay(this.ctx.storage.kv, env);
    this.storage = new HostStorage(this.ctx.storage.sql);
    this.tickMs = Number(env.INGEST_TICK_MS ?? "100");
    this.writer = new GroupWriter(
      this.ctx.storage,
      () => this.tickMs,
      {
        markets: () => this.engines,
        market: (symbol) => this.engine(symbol),
        failed: (symbol, error) => this.retire(symbol, error, "commit"),
        committed: (symbol) => this.quarantine.released(symbol),
        abort: (reason) => this.ctx.abort(reason),
      },
      // The fault switch of `npm run bench:isolation` (a Miniflare binding of that run): the market named fails its part of every commit.
      (env as unknown as { FAULT_MARKET?: string }).FAULT_MARKET,
    );
  }

  /** The engine of one of the group's markets (public for the tests, which look inside it). */
  engine(symbol: string): MarketEngine {
    let engine = this.engines.get(symbol);
    if (!engine) {
      const { storage } = this.ctx;
      engine = new MarketEngine({
        env: this.env,
        symbol,
        storage: {
          sql: scopedSql(storage.sql, tablePrefixOf(symbol)),
          transactionSync: (work) => storage.transactionSync(work),
          ...this.alarms.of(symbol),
          ring: this.writer.journal.ringOf(symbol),
          openSegments: this.openSegments,
        },
        send: (op) => this.relay.relay([op]),
        tick: this.writer.tick,
        roomFor: (bytes) => this.roomFor(symbol, bytes),
        failed: (error) => this.retire(symbol, error, "load"),
        held: () => this.quarantine.refusal(symbol),
        historyCache: this.historyCache,
        historyRead: (segment) => this.meter.holder.counts.add("mds_history_reads_total", { segment }),
      });
      this.engines.set(symbol, engine);
    }
    return engine;
  }

  /**
   * A tick's row stays within a value's size (`GroupWriter.room`). A commit made for room that
   * drops `symbol` (its part failed) answers its batch too: nothing it stages would be written.
   */
  private roomFor(symbol: string, bytes: number): ProblemError | undefined {
    if (!this.writer.room(symbol, bytes)) return undefined;
    return this.quarantine.refusal(symbol) ?? this.quarantine.failed(symbol, "dropped by the commit made for room");
  }

  /**
   * A market failed to load, stage or commit: its engine is dropped (its memory may be ahead of
   * storage; the next use rebuilds it from what is durable), its batches waiting for the tick get
   * the answer, and it is held a while. Returns the answer.
   */
  private retire(symbol: string, error: unknown, stage: "load" | "commit"): ProblemError {
    this.drop(symbol, stage);
    const answer = this.quarantine.failed(symbol, error);
    this.writer.tick.fail(symbol, answer);
    return answer;
  }

  /** Drops a market's engine after a failure (the next use rebuilds it from storage), counted for `/status` and the metrics. */
  private drop(symbol: string, stage: "load" | "commit" | "alarm"): void {
    this.engines.get(symbol)?.retire();
    this.engines.delete(symbol);
    this.historyCache.forget(symbol);
    this.meter.holder.counts.add("mds_market_failures_total", { symbol, stage });
  }

  ingest(market: MarketConfig, batch: IngestBatch, commit?: IngestCommit): Promise<IngestAnswer> {
    return this.ingestOne({ market, batch, commit });
  }

  /**
   * A publisher channel's batches for the group's markets, gathered into one call
   * (`../publish/host-calls.ts`) as one string (`encodeIngestCall`): each checked here against its
   * market's scales and rules, staged in the order given, answered once its tick is written — a
   * market that fails answers its own batches, never the others'.
   */
  ingestAll(items: string | CheckedIngestItem[]): Promise<IngestAnswer[]> {
    if (typeof items !== "string") return this.ingestChecked(items);
    return Promise.all(
      decodeIngestCall(items).map(({ market, body, commit }) => this.ingestOne({ market, batch: (held) => checkedAtHost(held, body), commit })),
    );
  }

  /** What a channel of the version before sends while a deploy rolls: batches it checked, each its string or its values. */
  private ingestChecked(items: CheckedIngestItem[]): Promise<IngestAnswer[]> {
    return Promise.all(
      items.map((item) => {
        let batch: IngestBatch;
        try {
          batch = typeof item.batch === "string" ? decodeIngestBatch(item.batch) : item.batch;
        } catch {
          // Only that batch's: the call's others are read and answered.
          return toProblemResult(problem("VALIDATION_FAILED", "the batch did not reach its market whole; it was not applied — send it again"));
        }
        return this.ingestOne({ ...item, batch });
      }),
    );
  }

  /** One batch: refused at once while its market is held; a market that fails to load or stage is held. */
  private async ingestOne({ market, batch, commit }: { market: MarketConfig; batch: IngestBatch | CheckAtHost; commit?: IngestCommit }): Promise<IngestAnswer> {
    const held = this.quarantine.refusal(market.symbol);
    if (held) return toProblemResult(held);
    if (this.storage.level(Date.now()) === "full") return toProblemResult(this.storageFull());
    try {
      return await this.engine(market.symbol).ingest(market, batch, commit);
    } catch (error) {
      if (error instanceof ProblemError) return toProblemResult(error);
      // The market's engine could not be built (its tables); a fault of the whole commit is not the market's.
      if (this.engines.has(market.symbol)) throw error;
      return toProblemResult(this.retire(market.symbol, error, "load"));
    }
  }

  private storageFull(): ProblemError {
    const limit = this.storage.limitBytes;
    return problem(
      "STORAGE_FULL",
      `the host of this market's group holds ${this.storage.size(Date.now())} of its ${limit} bytes: it takes no batches until the operator makes room (docs/capacity.md#a-hosts-storage); nothing of this batch was applied`,
      { retryAfterMs: 60_000 },
    );
  }

  /** Its SQLite's size, for the operator's scrape (`mds_host_storage_bytes`). */
  storageBytes(): number {
    return this.storage.size(Date.now());
  }

  /** The markets held after a failure, for `/status` and the metrics. */
  heldMarkets(): HeldMarket[] {
    return this.quarantine.list();
  }

  /**
   * A session into the group (`../rpc-sessions/`), one billed request however many calls ride on it: a
   * publisher channel's gathered batches, an address gate's market reads (docs/limits.md#address-gates).
   */
  openSession(): ObjectSession<MarketObject> {
    return new ObjectSession<MarketObject>(this, ["ingestAll", "answer"]);
  }

  importMinutes(market: MarketConfig, minutes: MinuteBucket[]): { imported: number; replaced: number } | ProblemResult {
    return this.engine(market.symbol).importMinutes(market, minutes);
  }

  bookAt(market: MarketConfig, target: BookTarget, depth: number): Promise<{ text: string; sequence: number; final: boolean } | ProblemResult> {
    return this.engine(market.symbol).bookAt(market, target, depth);
  }

  bookReplay(market: MarketConfig, from: number, to: number, after?: number, limits?: ReplayLimits): Promise<ReplayPage | ProblemResult> {
    return this.engine(market.symbol).bookReplay(market, from, to, after, limits);
  }

  /** Hands the closed hours due at `now` to their files' Workflow (the tests call it with a later clock). */
  closeBookHours(symbol: string, now?: number): Promise<number[]> {
    return this.engine(symbol).closeBookHours(now);
  }

  orderBook(market: MarketConfig, depth: number): OrderBookSnapshot | ProblemResult {
    return this.engine(market.symbol).orderBook(market, depth);
  }

  /** Moves due chunks of a market's old trades to R2 (the tests call it to move them now). */
  archiveTrades(symbol: string, now?: number, most?: number): Promise<number> {
    return this.engine(symbol).archiveTrades(now, most);
  }

  /** The daily files' calls (docs/history.md#daily-files): the run's, then the Workflow's. */
  daysToHand(market: MarketConfig, day: number): { trades: number; again: number[] } | ProblemResult {
    return this.engine(market.symbol).days.daysToHand(market, day);
  }

  openDay(market: MarketConfig, day: number): Promise<DayOpened | ProblemResult> {
    return this.engine(market.symbol).days.openDay(market, day);
  }

  dayPage(market: MarketConfig, day: number, fromId: number, throughSeq: number): DayPage | ProblemResult {
    return this.engine(market.symbol).days.dayPage(market, day, fromId, throughSeq);
  }

  markDay(market: MarketConfig, day: number): boolean | ProblemResult {
    return this.engine(market.symbol).days.markDay(market, day);
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

  /**
   * The markets whose alarms are due run in turn. A market whose alarm throws is retried on its
   * own back-off (`HostAlarms.failed`) and rebuilt from storage; the object's alarm never throws
   * for it, so the runtime's retries are never spent on one market and the others' alarms go on
   * (docs/design.md#isolation).
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    // The markets' next alarms are one write of the record, at the end (`HostAlarms.running`).
    await this.alarms.running(async () => {
      // Each market's minute work (its synchronous part) runs in turn; what awaits (R2, the files'
      // Workflow) runs side by side, each given up after alarmTimeoutMs: a slow market delays no other.
      const runs = this.alarms.take(now).map((symbol) => {
        const timedOut = new Error(`alarm not done within ${this.alarmTimeoutMs} ms`);
        return { symbol, timedOut, run: withTimeout(this.engine(symbol).alarm(), this.alarmTimeoutMs, timedOut) };
      });
      const outcomes = await Promise.allSettled(runs.map(({ run }) => run));
      for (const [i, outcome] of outcomes.entries()) {
        const { symbol, timedOut } = runs[i]!;
        if (outcome.status === "fulfilled") {
          this.alarms.succeeded(symbol);
          continue;
        }
        const retryAt = this.alarms.failed(symbol, now);
        logFailure("market alarm failed", { symbol, retryAt, error: outcome.reason });
        // Its memory may be ahead of what its alarm's transaction rolled back (one still running rolled nothing back).
        if (outcome.reason !== timedOut) this.drop(symbol, "alarm");
      }
    });
    this.checkStorage(now);
  }

  /** Once a minute while it trades (the markets' alarms are the minutes' ends): the operator hears before the host is full. */
  private checkStorage(now: number): void {
    const level = this.storage.level(now);
    if (level === "ok") return;
    const ordinal = [...this.engines.values()].map((engine) => engine.ordinal).find((n) => n !== undefined);
    const group = ordinal === undefined ? "unknown" : String(groupOf({ ordinal }));
    this.meter.holder.counts.add("mds_host_storage_warnings_total", { group, level: level === "full" ? "98" : "80" });
    logFailure("market host storage", { group, bytes: this.storage.size(now), of: this.storage.limitBytes }, "warn");
  }
}

meterRequests(MarketObject, [
  "ingest",
  "ingestAll",
  "openSession",
  "importMinutes",
  "orderBook",
  "archiveTrades",
  "daysToHand",
  "openDay",
  "dayPage",
  "markDay",
  "bookAt",
  "bookReplay",
  "closeBookHours",
  "answer",
  "configure",
  "subscribeShard",
  "unsubscribeShard",
  "storageBytes",
  "alarm",
]);
