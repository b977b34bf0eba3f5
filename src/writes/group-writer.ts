/**
 * What a group of markets writes, and in which order (docs/design.md#the-write-path): the one
 * place that stages a tick's bytes, commits every market's part in one transaction, covers the
 * records the journal's next row would overwrite, and writes that row. `market/` decides (which
 * markets, what a failed one answers, when to hold it) and asks the writer to write.
 *
 * A commit, in order:
 * 1. each market with staged batches writes its part, in a savepoint of its own: a part that
 *    throws is undone alone, and its market is told (`failed`);
 * 2. each market whose oldest record the row would overwrite writes a snapshot (its cover); one
 *    that cannot, or whose part failed (its memory is no snapshot), has its records kept aside;
 * 3. the journal's row: every committed market's record, one row a tick;
 * 4. once durable, what each part left to do (answers, publishing): nothing after can fail a batch.
 * A fault of the transaction itself restarts the object from storage (`abort`): no batch of the
 * tick was acknowledged.
 *
 * @example
 * const writer = new GroupWriter(ctx.storage, () => 100, { markets, market, failed, committed, abort });
 * const ring = writer.journal.ringOf("BTCUSDT"); // the market's records go into the group's rows
 * if (writer.room("BTCUSDT", bytes)) refuse(); // its part failed in the commit made for room
 * await writer.tick.committed("BTCUSDT"); // durable: answer now
 */
import { logFailure } from "../logs/log";
import { GroupJournal } from "./journal";
import { Tick } from "./tick";

/** A commit's row holds about this much at most: a batch that would take it past is written in the next (a row is at most 2 MB on Cloudflare). */
export const COMMIT_MAX_BYTES = 1_000_000;

/** One market as the writer sees it. */
export interface GroupMarket {
  /** Whether it holds staged batches. */
  readonly staging: boolean;
  /** Writes its staged batches (inside the commit's transaction); returns what to do once they are durable. */
  commitStaged(): () => void;
  /** Writes a snapshot that covers its records in the journal (inside the commit's transaction). */
  coverJournal(): () => void;
}

/** What the writer asks of the market layer. */
export interface GroupWriterHooks {
  /** The group's markets in memory, by symbol. */
  markets(): Iterable<[string, GroupMarket]>;
  /** One market, loaded if need be: a cover may be due for a market not in memory. */
  market(symbol: string): GroupMarket;
  /** A market's part failed and was undone: its batches get the answer this returns. */
  failed(symbol: string, error: unknown): unknown;
  /** A market's part is durable. */
  committed(symbol: string): void;
  /** The transaction itself failed: the object starts again from storage. */
  abort(reason: string): void;
}

export class GroupWriter {
  /** The group's commits: one row a tick for all its markets' records. */
  readonly journal: GroupJournal;
  /** The tick: what is staged between commits is written together. */
  readonly tick: Tick;
  /** About the bytes the tick's row will hold (each batch's `batchBytes`). */
  private stagedBytes = 0;
  /** The markets whose part failed in the last commit. */
  private lastFailed: ReadonlySet<string> = new Set();

  constructor(
    private readonly storage: DurableObjectStorage,
    tickMs: () => number,
    private readonly hooks: GroupWriterHooks,
    /** A market that fails its part of every commit (`npm run bench:isolation`'s fault switch; never in wrangler.toml). */
    private readonly faultMarket?: string,
  ) {
    this.journal = new GroupJournal(storage.sql);
    this.tick = new Tick(tickMs, () => this.commit());
  }

  /** Whether batches are staged and not yet committed. */
  get staged(): boolean {
    return this.stagedBytes > 0;
  }

  /**
   * Makes room for `bytes` more of `symbol` in the tick's row: what is staged is committed first
   * when they would take it past COMMIT_MAX_BYTES. True when that commit failed `symbol`'s part —
   * the batch asking must be answered too: nothing it stages would be written.
   */
  room(symbol: string, bytes: number): boolean {
    if (this.stagedBytes > 0 && this.stagedBytes + bytes > COMMIT_MAX_BYTES) {
      this.tick.commitNow();
      if (this.lastFailed.has(symbol)) return true;
    }
    this.stagedBytes += bytes;
    return false;
  }

  /** The group's commit, in the order above; returns the answers of the markets whose part failed. */
  private commit(): ReadonlyMap<string, unknown> {
    this.stagedBytes = 0;
    this.lastFailed = new Set();
    const after: (() => void)[] = [];
    const failed = new Map<string, unknown>();
    const committed: string[] = [];
    const part = (symbol: string, work: () => () => void): boolean => {
      try {
        after.push(this.storage.transactionSync(work));
        return true;
      } catch (error) {
        this.journal.drop(symbol);
        failed.set(symbol, error);
        return false;
      }
    };
    try {
      this.storage.transactionSync(() => {
        for (const [symbol, market] of this.hooks.markets()) {
          if (market.staging && part(symbol, () => this.partOf(symbol, market))) committed.push(symbol);
        }
        if (this.journal.staged) {
          for (const symbol of this.journal.dueForCover()) {
            if (failed.has(symbol) || !part(symbol, () => this.hooks.market(symbol).coverJournal())) this.journal.keepAside(symbol);
          }
        }
        this.journal.write();
      });
    } catch (error) {
      this.journal.discard();
      this.hooks.abort(`ingest failed to persist: ${String(error)}`);
      throw error;
    }
    this.lastFailed = new Set(failed.keys());
    const answers = new Map<string, unknown>();
    for (const [symbol, error] of failed) answers.set(symbol, this.hooks.failed(symbol, error));
    for (const symbol of committed) this.hooks.committed(symbol);
    for (const next of after) {
      try {
        next();
      } catch (error) {
        logFailure("after a commit", { error });
      }
    }
    return answers;
  }

  private partOf(symbol: string, market: GroupMarket): () => void {
    if (symbol === this.faultMarket) throw new Error(`${symbol} fails every commit (FAULT_MARKET)`);
    return market.commitStaged();
  }
}
