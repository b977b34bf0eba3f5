/**
 * A market's trades as its stores hold them and a page of them is asked for: the leaf every
 * part of the trade path names (the blocks, the archive, the wire form) without importing the
 * store that uses them all.
 */

/** A stored trade; prices and quantities are integer units at the market's scales. */
export interface StoredTrade {
  id: string;
  seq: number;
  price: bigint;
  quantity: bigint;
  side: "buy" | "sell";
  time: number;
}

/** A page of the trade history: any of the bounds, and how many. */
export interface TradePage {
  fromId?: number;
  before?: number;
  startTime?: number;
  endTime?: number;
  limit: number;
}

/** A page runs forwards from `fromId` or `startTime`; else it is the last `limit` before its upper bound. */
export function pageRunsForwards(page: Omit<TradePage, "limit">): boolean {
  return page.fromId !== undefined || (page.before === undefined && page.startTime !== undefined);
}

/** A chunk in the market's index: which trade ids and times it holds, and its size. */
export interface ArchivedChunk {
  chunk: number;
  firstSeq: number;
  lastSeq: number;
  minTime: number;
  maxTime: number;
  trades: number;
  bytes: number;
}
