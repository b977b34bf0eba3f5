import type { MarketHistory } from "../history/market-history";
import { logFailure } from "../logs/log";
import type { MarketStore } from "../writes/market-store";
import type { MinuteWrites } from "../writes/minute-writes";
import type { MarketBookHistory } from "./market-book-history";
import { type MarketState, TRADE_RETENTION_MS } from "./market-state";

const PRUNE_EVERY_MS = 60_000;

/** What the upkeep needs of its market's engine. */
export interface UpkeepParts {
  store: MarketStore;
  history: MarketHistory;
  bookHistory: MarketBookHistory;
  minutes: MinuteWrites;
  /** The market's symbol (known before it is loaded). */
  symbol: string;
  /** The market, loaded. */
  load(): MarketState;
  /** Whether batches wait for the tick. */
  staging(): boolean;
}

/**
 * A market's upkeep beside its writes (`market-engine.ts`): trades past the day pruned and moved
 * to R2 (docs/history.md#trades), and an ended hour's open book segment closed when no commit
 * came to close it.
 */
export class MarketUpkeep {
  private lastPruneAt = 0;

  constructor(private readonly parts: UpkeepParts) {}

  /** After a commit: prunes at most once a minute. */
  afterCommit(state: MarketState, now: number): void {
    if (now - this.lastPruneAt > PRUNE_EVERY_MS) this.prune(state, now);
  }

  /**
   * A market that went quiet: its open segment holds batches of an hour that has ended and no
   * commit came since to close it, so a snapshot closes it now — an hour's files are built from
   * closed segments in R2 alone. Not while batches wait for the tick: their commit closes it.
   */
  closeHour(now: number): void {
    const { store, bookHistory } = this.parts;
    if (this.parts.staging() || !bookHistory.holdsClosedHour(this.parts.symbol, now)) return;
    const state = this.parts.load();
    store.transaction(() => {
      const logged = bookHistory.record(state, [], [], state.lastUpdateAt, true);
      store.sealTrades();
      store.noteRecord(logged.fields);
    });
    bookHistory.uploadBeside(state.market.symbol);
  }

  private prune(state: MarketState, now: number): void {
    this.lastPruneAt = now;
    this.parts.store.prune(now - TRADE_RETENTION_MS, now);
    // The archive's writes are R2's: they run beside the ingest, never in its way.
    void this.archiveTrades(state, now).catch((error) => logFailure("trade archive failed", { error }));
    const cutoff = now - TRADE_RETENTION_MS;
    const firstKept = state.recentBuckets.findIndex((b) => b.minute >= cutoff);
    state.recentBuckets.splice(0, firstKept === -1 ? state.recentBuckets.length : firstKept);
  }

  /** Moves due chunks of old trades to R2 (docs/history.md#trades). */
  async archiveTrades(state: MarketState, now: number, most = 16): Promise<number> {
    const { store, history, minutes } = this.parts;
    // Buckets first, and only when a chunk is due: a write at this check's phase splits the minute's in two.
    if (!history.archiveDue(state.tradeSeq, now - TRADE_RETENTION_MS)) return 0;
    minutes.writeNow(state.tradeSeq, true);
    // The chunk may reach into the open block (a busy market's): its trades are written as a block first.
    store.transaction(() => store.sealTrades());
    const moved = await history.archive(state.market, state.tradeSeq, now - TRADE_RETENTION_MS, most);
    if (moved > 0) state.tradesCache = undefined;
    return moved;
  }
}
