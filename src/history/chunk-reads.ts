/**
 * An archived chunk of trades read back from R2 (docs/history.md#trades): by the market's pages on
 * its host, by the daily files' Workflow and by a catch-up's shard off it, the same way.
 */
import { gunzipText } from "../core/encoding";
import type { TradePage } from "../domain/trades";
import { type ArchivedTrade, chunkKey, withinPage } from "./trade-archive";

/** Every trade of `chunk`, in trade id order, or undefined when it is not in R2. */
export async function chunkTrades(bucket: R2Bucket, symbol: string, chunk: number): Promise<ArchivedTrade[] | undefined> {
  const object = await bucket.get(chunkKey(symbol, chunk));
  return object ? (JSON.parse(await gunzipText(object.body)) as ArchivedTrade[]) : undefined;
}

/** The trades of `chunk` that `bounds` admit, in trade id order; a chunk missing from R2 is an error. */
export async function readChunk(bucket: R2Bucket, symbol: string, chunk: number, bounds: Omit<TradePage, "limit">): Promise<ArchivedTrade[]> {
  const trades = await chunkTrades(bucket, symbol, chunk);
  if (!trades) throw new Error(`archive chunk ${chunk} of ${symbol} is missing`);
  return withinPage(trades, bounds);
}
