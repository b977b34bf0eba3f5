import type { ProblemError } from "../core/problem";
import type { WireLevel } from "../domain/order-book";
import type { RelayOp } from "../groups/messages";
import type { HistoryCache } from "../history/history-cache";
import type { MarketStorage } from "../writes/market-storage";
import type { Tick } from "../writes/tick";

/** The live book as `orderBook` answers it: levels to `depth`, with the sequence it shows. */
export interface OrderBookSnapshot {
  symbol: string;
  sequence: number;
  timestamp: number;
  bids: WireLevel[];
  asks: WireLevel[];
}

/** What a market's engine is given by the object that hosts it (`market-object.ts`). */
export interface MarketHost {
  readonly env: Env;
  /** The market this engine is. */
  readonly symbol: string;
  /** The market's view of the host's storage: its own tables, its own alarm. */
  readonly storage: MarketStorage;
  /** To the group's relay, in order (docs/design.md#group-relays). */
  send(op: RelayOp): void;
  /** The group's tick: the staged batches of all its markets are committed together (`market-object.ts`). */
  readonly tick: Tick;
  /**
   * Makes room in the tick's row for `bytes` more: what is staged is committed first if they would
   * take it past its bound. When that commit drops this market, the answer for the batch (not staged).
   */
  roomFor(bytes: number): ProblemError | undefined;
  /** The host's history cache, shared by its markets (`../history/history-cache.ts`). */
  readonly historyCache: HistoryCache;
  /** Counts a read of the book history by the segment it fell in: the log's open one, or a closed one (R2, or SQLite until uploaded; `mds_history_reads_total`). */
  historyRead(segment: "open" | "closed"): void;
  /** The market failed to load or stage (its memory may be ahead of storage): the host drops and holds it; the answer for its batches. */
  failed(error: unknown): ProblemError;
  /** While the market is held after a failure, the answer for its reads (no load is tried until its back-off ends). */
  held(): ProblemError | undefined;
}
