import { guarded, guardedAsync, isProblemResult, ProblemError, type ProblemResult, problem, toProblemResult } from "../core/problem";
import type { MarketAnswer, MarketQuestion } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { MinuteBucket } from "../domain/rolling-window";
import type { RelayOp } from "../groups/messages";
import type { BookTarget, ReplayLimits, ReplayPage } from "../history/book-replay";
import { MarketHistory } from "../history/market-history";
import { billed } from "../metrics/billed-bindings";
import { DERIVED_FIELDS, type MarketRecord, MarketStore } from "../writes/market-store";
import { MinuteWrites } from "../writes/minute-writes";
import { pack } from "../writes/trade-blocks";
import type { IngestAnswer, IngestCommit, IngestResult } from "./ingest";
import type { CheckAtHost, IngestBatch } from "./ingest-check";
import { MarketBookHistory } from "./market-book-history";
import { DayCalls, importMinutes } from "./market-days";
import type { MarketHost, OrderBookSnapshot } from "./market-host";
import { restoreState } from "./market-load";
import { MarketReads } from "./market-reads";
import { MarketSecondly } from "./market-secondly";
import type { MarketState } from "./market-state";
import { MarketStreams } from "./market-streams";
import { MarketUpkeep } from "./market-upkeep";
import { batchBytes, StagedBatches, stageBatch } from "./staged-batches";

export type { WireTrade } from "../domain/wire-trade";
export type { MarketHost, OrderBookSnapshot } from "./market-host";

/**
 * One market's single writer, hosted with the rest of its group in one object
 * (docs/design.md#market-hosts). Applies ingest batches exactly once, keeps the L2 book, trades
 * and minute buckets in SQLite, and answers every read of the market from memory it rebuilds
 * from that storage after eviction.
 *
 * It learns its config from the registry: every caller passes the market's config from its
 * registry copy, and the engine keeps (and stores) the newest revision it has seen, so a rules
 * or status change reaches it with the operator's push or with the next call, whichever is first.
 * Everything it publishes goes through its group relay (docs/design.md#group-relays).
 *
 * Each job has its own part, the engine holding them together and writing alone: its state in
 * memory and what derives from it (`market-state.ts`), storage (`market-store.ts`, its candle buckets in `bucket-store.ts`), the reads
 * (`market-reads.ts`), what stream subscribers get (`market-streams.ts`) and the archive and
 * daily files (`../history/market-history.ts`), the upkeep (`market-upkeep.ts`). Here: loading, ingest, import, persistence and
 * the timers.
 */
export class MarketEngine {
  private readonly store: MarketStore;
  /** The archive, the pages that read it and the daily files: over the same store, written by this object. */
  private readonly history: MarketHistory;
  /** The daily files' calls (docs/history.md#days-built-off-the-markets-host): bounded reads and a record write. */
  readonly days: DayCalls;
  /** The book's history: the book at any kept moment, the replay's pages, the hourly files. */
  private readonly bookHistory: MarketBookHistory;
  private state: MarketState | undefined;
  /** What the market's stream subscribers get (built only while a shard is subscribed). */
  private streams: MarketStreams | undefined;
  /** The once-a-second summary and the alarm. */
  private readonly secondly: MarketSecondly;
  /** Every read of the market, over the same store. */
  private readonly reads: MarketReads;
  /** The staged buckets' and ids' writes: at the minute's end, each minute once. */
  private readonly minutes: MinuteWrites;
  /** What the batches since the last commit applied, to be written with the group's tick (docs/design.md#the-write-path). */
  private staged = new StagedBatches();
  /** Dropped by its host after a failure: its timers send nothing more (a new engine serves the market). */
  private retired = false;
  /** Pruning, the trades' archive, the quiet hour's close. */
  private readonly upkeep: MarketUpkeep;

  constructor(private readonly host: MarketHost) {
    const { env, storage } = host;
    this.store = new MarketStore(storage);
    this.history = new MarketHistory(this.store, billed(env, "HISTORY"), env.TRADE_ARCHIVE_CHUNK);
    this.days = new DayCalls({
      load: (market) => this.load(market),
      commitStaged: () => this.host.tick.commitNow(),
      store: this.store,
      history: this.history,
      klines: (state, query) => this.reads.klines(state, query),
    });
    this.secondly = new MarketSecondly(
      storage,
      (op) => this.send(op),
      () => this.streams!,
    );
    this.bookHistory = new MarketBookHistory(
      this.store,
      storage.sql,
      billed(env, "HISTORY"),
      env.DB,
      (time) => this.secondly.alarmBy(time),
      host.historyCache,
      env.BOOK_FILES,
      (segment) => host.historyRead(segment),
    );
    this.reads = new MarketReads(this.store, this.history);
    this.minutes = new MinuteWrites(this.store, host.tick);
    this.upkeep = new MarketUpkeep({
      store: this.store,
      history: this.history,
      bookHistory: this.bookHistory,
      minutes: this.minutes,
      symbol: host.symbol,
      load: () => this.load(),
      staging: () => this.staging,
    });
  }

  /**
   * Loads the market on first use, and takes `given` if it is a newer revision of the config
   * than the one held. After an eviction the stored config serves calls that bring none (the alarm).
   */
  private load(given?: MarketConfig): MarketState {
    if (this.state) {
      if (given) this.adopt(this.state, given);
      return this.state;
    }
    const meta = this.store.readMeta();
    const stored = meta.config;
    const market = stored && (!given || stored.revision >= given.revision) ? stored : given;
    if (!market) throw new Error("a market's engine was called before it was given its config");
    if (stored && given && given.symbol !== stored.symbol) throw new Error(`the engine of ${stored.symbol} called as ${given.symbol}`);
    if (market !== stored) this.store.writeMeta("config", JSON.stringify(market));
    this.streams = new MarketStreams(
      meta.shards,
      (op) => this.send(op),
      (shards) => this.store.writeMeta("shards", JSON.stringify(shards)),
      (state, openTime, interval, offsetMs) => this.reads.candleAt(state, openTime, interval, offsetMs),
    );
    this.state = restoreState(this.store, meta, market, Date.now());
    // A segment kept before a restart that R2 does not have yet.
    if (this.bookHistory.kept.pending) this.bookHistory.uploadBeside(market.symbol);
    return this.state;
  }

  private adopt(state: MarketState, given: MarketConfig): void {
    if (given.symbol !== state.market.symbol) throw new Error(`the engine of ${state.market.symbol} called as ${given.symbol}`);
    if (given.revision <= state.market.revision) return;
    state.market = given;
    state.version += 1; // the cached answers show the rules and status
    this.store.writeMeta("config", JSON.stringify(given));
  }

  private send(op: RelayOp): void {
    if (!this.retired) this.host.send(op);
  }

  /** Its host dropped it after a failure (docs/design.md#isolation): what it still has scheduled sends nothing. */
  retire(): void {
    this.retired = true;
  }

  /** The market for a read: a held market is refused, and one whose load fails is held (not loaded again by every read). */
  private readable(market: MarketConfig | undefined): MarketState {
    const held = this.state ? undefined : this.host.held();
    if (held) throw held;
    let state: MarketState;
    try {
      state = this.load(market);
    } catch (error) {
      throw error instanceof ProblemError ? error : this.host.failed(error);
    }
    if (state.market.status === "DELISTED") throw problem("UNKNOWN_SYMBOL", `${state.market.symbol} is delisted`);
    return state;
  }

  /**
   * Applies one validated batch (docs/publishing.md): book first, all or nothing, then trades.
   * A batch checked against an older config than the market holds is not applied: the answer
   * carries the newer config, and the caller checks the batch again with it. The answer waits
   * for the tick's commit (docs/design.md#the-write-path): when it comes, the batch is durable.
   */
  async ingest(market: MarketConfig, batch: IngestBatch | CheckAtHost, commit: IngestCommit = "tick"): Promise<IngestAnswer> {
    const staged = this.stage(market, batch);
    if (isProblemResult(staged) || "newerConfig" in staged) return staged;
    const { tick } = this.host;
    const committed = tick.committed(market.symbol);
    if (commit === "now") tick.commitNow();
    await committed;
    return staged;
  }

  /**
   * Loads the market and stages one batch; a throw that is not a refusal (a load that fails, a
   * fault half-way through applying) is the market's failure alone: its host drops and holds it
   * (docs/design.md#isolation), and the batch is answered as not applied.
   */
  private stage(market: MarketConfig, batch: IngestBatch | CheckAtHost): IngestResult | { newerConfig: MarketConfig } | ProblemResult {
    try {
      return guarded(() => this.applyBatch(market, batch));
    } catch (error) {
      return toProblemResult(this.host.failed(error));
    }
  }

  private applyBatch(market: MarketConfig, given: IngestBatch | CheckAtHost): IngestResult | { newerConfig: MarketConfig } {
    const state = this.load(market);
    // A batch checked by its caller against an older config is checked again; one checked here is checked against the newest.
    if (typeof given !== "function" && state.market.revision > market.revision) return { newerConfig: state.market };
    if (state.market.status !== "TRADING")
      throw problem("MARKET_NOT_TRADING", `${market.symbol} is ${state.market.status.toLowerCase()} and accepts no ingest`);
    const batch = typeof given === "function" ? given(state.market) : given;
    // A commit's row stays within a value's size: what is staged goes first when this batch would take it past.
    const dropped = this.host.roomFor(batchBytes(batch));
    if (dropped) throw dropped;
    const { result, streamed } = stageBatch(this.store, state, this.staged, batch, Date.now());
    this.staged.batches += 1;
    // Streamed as applied, not at the commit: a delta's checksum is the book it leaves, and the
    // tick would add its wait to every subscriber's (docs/design.md#the-write-path).
    this.streams!.batch(state, streamed.book, streamed.trades);
    return result;
  }

  /** The market's listing order, once it is loaded (its group's number is `groupOf` it). */
  get ordinal(): number | undefined {
    return this.state?.market.ordinal;
  }

  /** Whether batches applied since the last commit wait for it. */
  get staging(): boolean {
    return this.staged.batches > 0;
  }

  /**
   * Writes what the batches since the last commit staged, inside the group's commit
   * (`market-object.ts`): the commit's record (its book entries and trades) into the tick's row
   * of the group's journal, the buckets, ids and open block when due, the market's record when a
   * mark changed. Returns what follows once the commit is durable (the summary, the upload).
   */
  commitStaged(): () => void {
    const state = this.state!;
    const staged = this.staged;
    this.staged = new StagedBatches();
    const now = Date.now();
    let segmentClosed = false;
    const record: Partial<MarketRecord> = { ...staged.record };
    const last = staged.entries[staged.entries.length - 1];
    if (last || staged.trades.length > 0) {
      // One record for the commit: its book entries and its trades (docs/design.md#the-write-path).
      // The trades' time is the last batch's (the market's last update, as the ticker shows it).
      this.store.appendTrades(staged.trades, state.lastUpdateAt);
      const logged = this.bookHistory.record(state, staged.entries, staged.trades.map(pack), state.lastUpdateAt);
      segmentClosed = logged.closed;
      Object.assign(record, logged.fields);
      if (last) Object.assign(record, { bookSequence: state.book.sequence, bookUpdatedAt: last.time, bookFingerprint: last.fingerprint });
      if (staged.trades.length > 0) record.tradeSeq = state.tradeSeq;
      // A snapshot took the record's place, or the open block is full: the trades not in a block are written as one now.
      if (logged.snapshot || this.store.openBlockFull()) this.store.sealTrades();
    }
    // The staged buckets and ids of a closed minute are written by the first commit a moment after its end (rebuilt from the trades after a restart).
    Object.assign(record, this.minutes.atCommit(state.tradeSeq, now));
    if (staged.changed) record.lastUpdateAt = state.lastUpdateAt;
    // One row for all of it when something the log and the blocks do not keep changed; else none.
    const keys = Object.keys(record) as (keyof MarketRecord)[];
    if (keys.some((key) => !DERIVED_FIELDS.includes(key))) this.store.writeRecord(record);
    else if (keys.length > 0) this.store.noteRecord(record);
    return () => {
      if (staged.changed) this.secondly.schedule(state, now);
      if (staged.entries.length > 0) this.bookHistory.applied(state, now, segmentClosed);
      else if (segmentClosed) this.bookHistory.uploadBeside(state.market.symbol);
      this.upkeep.afterCommit(state, now);
    };
  }

  /**
   * The group's journal is about to write over this market's oldest record that its snapshot
   * does not cover: a snapshot now covers its log (inside the group's commit; a quiet market's,
   * about once per JOURNAL_SLOTS ticks). Returns the closed segment's upload.
   */
  coverJournal(): () => void {
    const state = this.load();
    // Counted as uncovered after a restart, its records may already be under its snapshot: nothing to write.
    if (!this.store.book.holdsRecords(this.store.bookPosition())) return () => {};
    const logged = this.bookHistory.record(state, [], [], state.lastUpdateAt, true);
    // The trades of the records the snapshot covers are written as a block.
    this.store.sealTrades();
    this.store.noteRecord(logged.fields);
    return () => {
      if (logged.closed) this.bookHistory.uploadBeside(state.market.symbol);
    };
  }

  /**
   * Brings in a market's past as minutes (docs/history.md#import), all or nothing: a minute that
   * holds live trades is refused (409 naming it), an imported one is replaced. The hours and days
   * over the imported span are built again from the minutes, so every coarser candle and window
   * sees them exactly as it sees live ones.
   */
  importMinutes(market: MarketConfig, minutes: MinuteBucket[]): { imported: number; replaced: number } | ProblemResult {
    return guarded(() => {
      const state = this.readable(market);
      this.minutes.writeNow(state.tradeSeq, true);
      return importMinutes(this.store, state, minutes);
    });
  }

  /**
   * The book as it stood at a sequence or a moment (docs/history.md#book-history), as JSON text
   * in the live answer's shape; `final` when it can change no more.
   */
  bookAt(market: MarketConfig, target: BookTarget, depth: number): Promise<{ text: string; sequence: number; final: boolean } | ProblemResult> {
    return guardedAsync(async () => {
      // History holds what is committed: a sequence staged for the tick is answered once it is
      // durable (a failed commit answers 503, and the sequence may be another's), never as older.
      if ("sequence" in target && this.staging && target.sequence > this.store.committedBookSequence()) await this.host.tick.committed(market.symbol);
      return this.bookHistory.bookAt(this.readable(market), target, depth);
    });
  }

  /** One page of a replay's book messages (docs/history.md#replay). */
  bookReplay(market: MarketConfig, from: number, to: number, after?: number, limits?: ReplayLimits): Promise<ReplayPage | ProblemResult> {
    return guardedAsync(() => this.bookHistory.replayPage(this.readable(market), from, to, after, limits));
  }

  /** Hands the closed hours due at `now` to their files' Workflow (the alarm does; the tests call it with a later clock). */
  async closeBookHours(now = Date.now()): Promise<number[]> {
    if (!this.state && !this.store.hasConfig()) return [];
    this.upkeep.closeHour(now);
    return this.bookHistory.closeHours(this.load(), now);
  }

  orderBook(market: MarketConfig, depth: number): OrderBookSnapshot | ProblemResult {
    return guarded(() => {
      const state = this.readable(market);
      const { bids, asks } = state.book.levels(depth);
      return { symbol: market.symbol, sequence: state.book.sequence, timestamp: Date.now(), bids, asks };
    });
  }

  /** Moves due chunks of old trades to R2 (docs/history.md#trades); the tests call it to move them now. */
  archiveTrades(now = Date.now(), most = 16): Promise<number> {
    return this.state ? this.upkeep.archiveTrades(this.state, now, most) : Promise.resolve(0);
  }

  /**
   * One read for the edge copies (docs/edge-reads.md): the answer as JSON text, with the moment
   * it shows, so an isolate serves it as it is and never puts an older answer over a newer one.
   */
  async answer(market: MarketConfig, question: MarketQuestion): Promise<MarketAnswer> {
    const at = Date.now();
    let version = this.state?.version ?? 0;
    let result: string | ProblemResult;
    try {
      const state = this.readable(market);
      // The version the answer shows is the one when it was asked (a page read from R2 awaits).
      version = state.version;
      result = await this.reads.answerOf(state, question, at);
    } catch (error) {
      if (!(error instanceof ProblemError)) throw error;
      result = toProblemResult(error);
    }
    return isProblemResult(result) ? { text: "", problem: result.problem, at, version } : { text: result, at, version };
  }

  /**
   * The operator pushes a changed config (rules, status) as soon as it is committed: a halt takes
   * effect at once, and the all-market answers hear of it with the summary sent now.
   */
  configure(market: MarketConfig): void {
    const state = this.load(market);
    this.secondly.now(state, Date.now());
    if (state.market.status === "DELISTED") this.streams!.end(state);
  }

  /** A shard subscribes: its first message is the whole book, down the channel of every delta after it. */
  subscribeShard(market: MarketConfig, shard: string): void {
    const state = this.load(market); // builds the streams on first use
    this.streams!.join(state, shard);
  }

  unsubscribeShard(market: MarketConfig, shard: string): void {
    const state = this.load(market);
    this.streams!.leave(state, shard);
  }

  async alarm(): Promise<void> {
    this.host.tick.commitNow();
    this.secondly.fired();
    // The staged buckets of a market that stopped trading are written by its alarm.
    if (this.state) this.minutes.atAlarm(this.state.tradeSeq, Date.now());
    // After an eviction the object knows its market only from storage.
    if (this.state || this.store.hasConfig()) this.secondly.now(this.load(), Date.now());
    // Last: the summary's alarm (a minute on at most) stands, and the book files' later one needs no row of its own.
    if (this.state || this.store.hasConfig()) this.upkeep.closeHour(Date.now());
    await this.bookHistory.alarm(() => this.load(), Date.now());
  }
}
