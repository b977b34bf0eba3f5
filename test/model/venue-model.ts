/**
 * The venue's promises, plainly (docs/publishing.md, docs/history.md): what a market's book is at
 * every sequence, which trades it holds, and how each batch is answered. No I/O, no cleverness —
 * short enough to read in one sitting; the model tests (`venue.model.test.ts`) check the real
 * service's answers against it after every command.
 */

export type Level = [price: string, quantity: string];
export interface ModelTrade {
  id: string;
  price: string;
  quantity: string;
  side: "buy" | "sell";
  time: number;
}
export interface ModelBatch {
  symbol: string;
  book: { type: "snapshot" | "delta"; sequence: number; bids: Level[]; asks: Level[] };
  trades: ModelTrade[];
}
/** How a batch is answered: applied or a resend (`duplicate`), or refused whole with a code. */
export type Expected = { book: "applied" | "duplicate"; accepted: number; duplicates: number } | { refused: string };

/** Kept resends: a market recognises its last 1,024 applied updates (docs/publishing.md#resending). */
export const RESEND_WINDOW = 1_024;

export class MarketModel {
  sequence = 0;
  bids = new Map<string, string>();
  asks = new Map<string, string>();
  /** The book after each applied sequence. */
  readonly history = new Map<number, { bids: Level[]; asks: Level[] }>();
  /** Applied batches by their sequence, as sent (a resend is the same again). */
  readonly applied = new Map<number, ModelBatch>();
  readonly trades = new Map<string, ModelTrade>();

  constructor(readonly symbol: string) {}

  /** The answer the service owes `batch`; the model changes only when it is applied. */
  ingest(batch: ModelBatch): Expected {
    const { book } = batch;
    if (book.sequence <= this.sequence) {
      const same = this.applied.get(book.sequence);
      if (same && JSON.stringify(same) === JSON.stringify(batch) && this.sequence - book.sequence < RESEND_WINDOW) {
        return { book: "duplicate", accepted: 0, duplicates: batch.trades.length };
      }
      return { refused: "STALE_SEQUENCE" };
    }
    if (book.type === "delta" && book.sequence !== this.sequence + 1) return { refused: "SEQUENCE_GAP" };
    if (book.type === "snapshot") {
      this.bids.clear();
      this.asks.clear();
    }
    for (const [price, quantity] of book.bids) setLevel(this.bids, price, quantity);
    for (const [price, quantity] of book.asks) setLevel(this.asks, price, quantity);
    this.sequence = book.sequence;
    this.history.set(book.sequence, this.levels());
    this.applied.set(book.sequence, batch);
    let accepted = 0;
    for (const trade of batch.trades) {
      if (this.trades.has(trade.id)) continue;
      this.trades.set(trade.id, trade);
      accepted += 1;
    }
    return { book: "applied", accepted, duplicates: batch.trades.length - accepted };
  }

  /** Both sides, best first. */
  levels(): { bids: Level[]; asks: Level[] } {
    return { bids: sorted(this.bids, true), asks: sorted(this.asks, false) };
  }
}

function setLevel(side: Map<string, string>, price: string, quantity: string): void {
  if (Number(quantity) === 0) side.delete(price);
  else side.set(price, quantity);
}

function sorted(side: Map<string, string>, descending: boolean): Level[] {
  return [...side].sort(([a], [b]) => (descending ? Number(b) - Number(a) : Number(a) - Number(b)));
}
