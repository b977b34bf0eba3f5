import type { IngestBatch, UnitTradeInput } from "./ingest";
import type { BookUpdate, UnitLevel } from "./order-book";

/**
 * A checked batch as one string for the call into its market's host (the publisher channel's
 * `ingestAll`), and back. Why: an RPC argument is copied value by value, and a batch of the venue's
 * shape is some thirty objects and bigints — about half of a channel's CPU a batch went into
 * copying them (docs/benchmarks.md#one-channel); one string is copied whole. Units travel as
 * their decimal digits, so nothing is rounded.
 *
 * @example
 * decodeIngestBatch(encodeIngestBatch(batch)); // equal to batch
 */
export function encodeIngestBatch(batch: IngestBatch): string {
  const trades: (string | number)[] = [];
  for (const t of batch.trades) trades.push(t.id, t.price.toString(), t.quantity.toString(), t.side, t.time);
  if (!batch.book) return JSON.stringify([trades]);
  return JSON.stringify([trades, batch.book.map((u) => [u.type, u.sequence, flatLevels(u.bids), flatLevels(u.asks)])]);
}

/** The batch `encodeIngestBatch` wrote. */
export function decodeIngestBatch(text: string): IngestBatch {
  const [flatTrades, book] = JSON.parse(text) as [(string | number)[], [BookUpdate["type"], number, string[], string[]][] | undefined];
  const trades: UnitTradeInput[] = [];
  for (let i = 0; i < flatTrades.length; i += 5) {
    trades.push({
      id: flatTrades[i] as string,
      price: BigInt(flatTrades[i + 1] as string),
      quantity: BigInt(flatTrades[i + 2] as string),
      side: flatTrades[i + 3] as UnitTradeInput["side"],
      time: flatTrades[i + 4] as number,
    });
  }
  if (!book) return { trades };
  return { trades, book: book.map(([type, sequence, bids, asks]) => ({ type, sequence, bids: unitLevels(bids), asks: unitLevels(asks) })) };
}

function flatLevels(levels: readonly UnitLevel[]): string[] {
  const flat: string[] = new Array(levels.length * 2);
  for (let i = 0; i < levels.length; i++) {
    flat[2 * i] = levels[i]![0].toString();
    flat[2 * i + 1] = levels[i]![1].toString();
  }
  return flat;
}

function unitLevels(flat: string[]): UnitLevel[] {
  const levels: UnitLevel[] = new Array(flat.length / 2);
  for (let i = 0; i < levels.length; i++) levels[i] = [BigInt(flat[2 * i]!), BigInt(flat[2 * i + 1]!)];
  return levels;
}
