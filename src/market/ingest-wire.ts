import type { MarketConfig } from "../domain/market-config";
import type { BookUpdate, UnitLevel } from "../domain/order-book";
import type { IngestCommit, IngestItem } from "./ingest";
import type { IngestBatch, UnitTradeInput } from "./ingest-check";
import type { IngestBody } from "./schemas";

/** A batch as `encodeIngestBatch` writes it, parsed: trades flat, then the book's updates. */
type WireBatch = [(string | number)[], [BookUpdate["type"], number, string[], string[]][] | undefined];

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
  return batchOf(JSON.parse(text) as WireBatch);
}

function batchOf([flatTrades, book]: WireBatch): IngestBatch {
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

/** Each config's JSON, written once: the registry copy's config objects stand until it changes. */
const configTexts = new WeakMap<MarketConfig, string>();

function configText(market: MarketConfig): string {
  let text = configTexts.get(market);
  if (text === undefined) {
    text = JSON.stringify(market);
    configTexts.set(market, text);
  }
  return text;
}

/**
 * A host call's items (`ingestAll`) as one string: each item's config, body and commit, the body's
 * JSON embedded as written. Why: RPC copies an argument value by value, and a config is a dozen
 * more; an array of items cost a busy channel more CPU than any other part of its call
 * (docs/benchmarks.md#one-channel), one string is copied whole.
 *
 * @example
 * decodeIngestCall(encodeIngestCall(items)); // each item's config, body (parsed) and commit
 */
export function encodeIngestCall(items: readonly IngestItem[]): string {
  let text = "[";
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    text += `${i === 0 ? "" : ","}[${configText(item.market)},${item.body},${JSON.stringify(item.commit)}]`;
  }
  return `${text}]`;
}

/** A call `encodeIngestCall` wrote: per item its config, its body (its decimals checked at the host) and commit. */
export function decodeIngestCall(text: string): { market: MarketConfig; body: IngestBody; commit: IngestCommit }[] {
  const items = JSON.parse(text) as [MarketConfig, IngestBody, IngestCommit][];
  return items.map(([market, body, commit]) => ({ market, body, commit }));
}
