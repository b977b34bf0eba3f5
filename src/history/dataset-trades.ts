/**
 * A minute's trades read from a built day's `trades` dataset (docs/tardis.md#data-feeds): the one
 * hour holding it, by a range read of its gzip member, decoded once an isolate (least recently used
 * out, 16 MB). A day not built yet answers undefined — its trades are the market host's to answer —
 * and is remembered a minute, so the day's minutes ask R2 once, not each.
 */
import { BoundedMap, isolateCaches } from "../core/bounded-map";
import { gunzipText } from "../core/encoding";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../domain/intervals";
import type { WireTrade } from "../domain/wire-trade";
import { fileIsFinal } from "./daily-files";
import { datasetKey, TRADE_HOURS_METADATA, tradesOfRows } from "./datasets";

/** A day not built is asked again after this long; a built one that may still change (late trades rebuild it), after this. */
const UNBUILT_MS = MINUTE_MS;
const CHANGING_MS = 5 * MINUTE_MS;

/**
 * A built day's file: where its hours lie, its version (`etag`: an hour is read only from the
 * version its offsets are of), whether it can change no more (no late trade can reach its day),
 * and when it was looked at.
 */
type Day = { ends: number[]; etag: string; final: boolean; at: number } | { unbuiltAt: number };
const days = new BoundedMap<Day>(1024 * 1024, 4_096, (key) => 2 * key.length + 300, isolateCaches);
const hours = new BoundedMap<WireTrade[]>(16 * 1024 * 1024, 1_024, (key, trades) => 2 * key.length + 160 * trades.length, isolateCaches);

async function dayOf(bucket: R2Bucket, key: string, dayStart: number, now: number): Promise<Day> {
  const known = days.get(key);
  if (known && ("unbuiltAt" in known ? now - known.unbuiltAt < UNBUILT_MS : known.final || now - known.at < CHANGING_MS)) return known;
  const head = await bucket.head(key);
  const metadata = head?.customMetadata?.[TRADE_HOURS_METADATA];
  const day: Day =
    head && metadata
      ? { ends: JSON.parse(metadata) as number[], etag: head.etag, final: fileIsFinal(dayStart, head.uploaded.getTime()), at: now }
      : { unbuiltAt: now };
  days.set(key, day);
  return day;
}

/** One hour's trades of a built day, or undefined when the day is not built (or was built again meanwhile: asked again next time). */
async function hourTrades(bucket: R2Bucket, symbol: string, hourStart: number, now: number): Promise<{ trades: WireTrade[]; final: boolean } | undefined> {
  const dayStart = Math.floor(hourStart / DAY_MS) * DAY_MS;
  const key = datasetKey("trades", dayStart, symbol);
  const day = await dayOf(bucket, key, dayStart, now);
  if ("unbuiltAt" in day) return undefined;
  const hour = Math.floor((hourStart - dayStart) / HOUR_MS);
  const name = `${key}|${day.etag}|${hour}`;
  let trades = hours.get(name);
  if (!trades) {
    const offset = day.ends[hour]!;
    const length = day.ends[hour + 1]! - offset;
    const object = await bucket.get(key, { range: { offset, length }, onlyIf: { etagMatches: day.etag } });
    if (!object || !("body" in object)) {
      days.delete(key);
      return undefined;
    }
    trades = tradesOfRows(await gunzipText(object.body));
    hours.set(name, trades);
  }
  return { trades, final: day.final };
}

/**
 * The trades of `symbol` from `start` through `end` (both in) from their days' datasets, in time
 * order (trade id order within it), and whether they can change no more; undefined when a day they
 * fall in is not built.
 */
export async function datasetTrades(
  bucket: R2Bucket,
  symbol: string,
  start: number,
  end: number,
  now = Date.now(),
): Promise<{ trades: WireTrade[]; final: boolean } | undefined> {
  const out: WireTrade[] = [];
  let final = true;
  for (let hour = Math.floor(start / HOUR_MS) * HOUR_MS; hour <= end; hour += HOUR_MS) {
    const read = await hourTrades(bucket, symbol, hour, now);
    if (!read) return undefined;
    out.push(...read.trades.filter((t) => t.time >= start && t.time <= end));
    final &&= read.final;
  }
  return { trades: out, final };
}
