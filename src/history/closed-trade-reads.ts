/**
 * Archived trades read where they lie (docs/history.md#trades): a chunk of the trade archive is
 * immutable once in R2 (a symbol's trade ids are never reused) and its name follows from a trade
 * id (`chunkKey`), so a catch-up's pages by id are read by the stream shard itself from R2; the
 * market's host, whose thread commits its group's batches, answers only what is still hot. It
 * decoded a whole chunk of 10,000 trades for each page of 1,000 before.
 *
 * Bounded per isolate: the chunks it has decoded (CHUNKS_MAX_BYTES), least recently used out
 * first, and per market the first chunk found missing, remembered MISSING_MS (a catch-up through
 * hot trades probes R2 once in that time, not once a page).
 */
import { BoundedMap, isolateCaches } from "../core/bounded-map";
import type { WireTrade } from "../domain/wire-trade";
import { chunkTrades } from "./chunk-reads";
import type { ClosedHistory } from "./closed-book-reads";
import { type ArchivedTrade, chunkKey, MAX_CHUNK_READS } from "./trade-archive";

/** Decoded chunks an isolate keeps, in bytes: a trade held as an object is about TRADE_BYTES. */
const CHUNKS_MAX_BYTES = 8 * 1024 * 1024;
const TRADE_BYTES = 200;
/** How long a chunk found missing (not archived yet) is taken as missing before R2 is asked again. */
const MISSING_MS = 60_000;

const chunks = new BoundedMap<ArchivedTrade[]>(CHUNKS_MAX_BYTES, 256, (key, trades) => 2 * key.length + TRADE_BYTES * trades.length, isolateCaches);
const missing = new BoundedMap<{ chunk: number; until: number }>(256 * 1024, 2_048, (key) => 2 * key.length + 32, isolateCaches);

/** Chunk `chunk` of the symbol's archive, whole (`size` trades from id chunk × size + 1), or undefined when it is not in R2. */
async function chunkOf(history: ClosedHistory, symbol: string, size: number, chunk: number, now: number): Promise<ArchivedTrade[] | undefined> {
  const key = chunkKey(symbol, chunk);
  const held = chunks.get(key);
  if (held) {
    history.counted("memory");
    return held;
  }
  const gone = missing.get(symbol);
  if (gone && chunk >= gone.chunk && now < gone.until) return undefined;
  const trades = await chunkTrades(history.bucket, symbol, chunk);
  if (!trades) {
    missing.set(symbol, { chunk, until: now + MISSING_MS });
    return undefined;
  }
  history.counted("r2");
  // A chunk is its ids, every one: anything else (another chunk size) is left to the host, which knows its index.
  if (trades.length !== size || trades[0]?.tradeId !== chunk * size + 1 || trades.at(-1)?.tradeId !== (chunk + 1) * size) return undefined;
  chunks.set(key, trades);
  return trades;
}

/**
 * Up to `limit` trades from id `fromId` on, from the archive's chunks in R2, with no call to the
 * market's host; short where the archive ends (the next page, from its last id, is the host's), and
 * undefined when `fromId`'s chunk is not archived or cannot be (it ends past `liveId`, the last
 * trade the caller has seen live).
 *
 * @example
 * const page = await closedTradesFrom(closed, "BTCUSDT", 10_000, cursor + 1, 1_000, lastLiveId);
 */
export async function closedTradesFrom(
  history: ClosedHistory,
  symbol: string,
  size: number,
  fromId: number,
  limit: number,
  liveId: number | undefined,
  now = Date.now(),
): Promise<WireTrade[] | undefined> {
  const out: WireTrade[] = [];
  let next = fromId;
  for (let reads = 0; out.length < limit && reads < MAX_CHUNK_READS; reads++) {
    const chunk = Math.floor((next - 1) / size);
    // A chunk is archived only once complete: one ending past the live trades is not there yet.
    if (liveId === undefined || (chunk + 1) * size > liveId) break;
    const trades = await chunkOf(history, symbol, size, chunk, now);
    if (!trades) break;
    const start = next - (chunk * size + 1);
    out.push(...trades.slice(start, start + limit - out.length));
    next = out.at(-1)!.tradeId + 1;
  }
  return out.length > 0 ? out : undefined;
}
