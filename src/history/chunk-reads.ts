/**
 * An archived chunk of trades read back from R2 (docs/history.md#trades): by the market's pages on
 * its host and by the daily files' Workflow off it, the same way.
 */
import { gunzipText } from "../core/encoding";
import type { TradePage } from "../domain/trades";
import { type ArchivedTrade, chunkKey, withinPage } from "./trade-archive";

/** The trades of `chunk` that `bounds` admit, in trade id order; a chunk missing from R2 is an error. */
export async function readChunk(bucket: R2Bucket, symbol: string, chunk: number, bounds: Omit<TradePage, "limit">): Promise<ArchivedTrade[]> {
  const object = await bucket.get(chunkKey(symbol, chunk));
  if (!object) throw new Error(`archive chunk ${chunk} of ${symbol} is missing`);
  const text = await gunzipText(object.body);
  return withinPage(JSON.parse(text) as ArchivedTrade[], bounds);
}
