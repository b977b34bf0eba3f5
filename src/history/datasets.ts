/**
 * A market's day as Tardis's CSV datasets (docs/tardis.md#datasets), pure: the types, their R2
 * keys, their columns and rows. Timestamps are microseconds since the epoch, as Tardis writes
 * them; a row's `timestamp` and `local_timestamp` are both the moment the venue applied it.
 */
import { HOUR_MS } from "../domain/intervals";
import type { WireLevel } from "../domain/order-book";
import type { WireTrade } from "../domain/wire-trade";

/** The day's datasets, as `downloadDatasets` names them. */
export const DATASET_TYPES = ["trades", "incremental_book_L2", "book_snapshot_25", "quotes"] as const;
export type DatasetType = (typeof DATASET_TYPES)[number];
export type BookDatasetType = Exclude<DatasetType, "trades">;
export const BOOK_DATASET_TYPES: readonly BookDatasetType[] = ["incremental_book_L2", "book_snapshot_25", "quotes"];

/** The exchange name the datasets and the feed are served under: the venue speaks Binance's dialect. */
export const DATASET_EXCHANGE = "binance";

/** `tardis/datasets/binance/trades/2026/12/06/BTCUSDT.csv.gz`: the path `downloadDatasets` asks for, under the bucket's prefix. */
export function datasetKey(type: DatasetType, day: number, symbol: string): string {
  const [y, m, d] = new Date(day).toISOString().slice(0, 10).split("-");
  return `tardis/datasets/${DATASET_EXCHANGE}/${type}/${y}/${m}/${d}/${symbol}.csv.gz`;
}

/**
 * Days a day's datasets are kept in R2 (an R2 lifecycle rule on `tardis/datasets/`, docs/tardis.md#datasets):
 * they are made from the segments and the trades zip, kept for ever, so an older day is built again when asked.
 */
export const DATASETS_KEPT_DAYS = 30;

/** Levels in a `book_snapshot_25` row. */
const SNAPSHOT_DEPTH = 25;

/** Each type's first line. */
export const DATASET_HEADERS: Record<DatasetType, string> = {
  trades: "exchange,symbol,timestamp,local_timestamp,id,side,price,amount\n",
  incremental_book_L2: "exchange,symbol,timestamp,local_timestamp,is_snapshot,side,price,amount\n",
  book_snapshot_25: `exchange,symbol,timestamp,local_timestamp,${Array.from(
    { length: SNAPSHOT_DEPTH },
    (_, i) => `asks[${i}].price,asks[${i}].amount,bids[${i}].price,bids[${i}].amount`,
  ).join(",")}\n`,
  quotes: "exchange,symbol,timestamp,local_timestamp,ask_amount,ask_price,bid_price,bid_amount\n",
};

const micros = (ms: number) => `${ms}000`;

/**
 * A day's trades file of Binance's layout (`id,price,qty,quoteQty,time,isBuyerMaker,isBestMatch`,
 * docs/history.md#daily-files) as `trades` rows, an hour's rows apart (by the trade's time; each
 * hour in trade id order): the taker sold when the buyer was the maker.
 */
export function tradeHourRows(symbol: string, day: number, binanceCsv: string): string[] {
  const into = Array.from({ length: 24 }, () => "");
  for (const line of binanceCsv.split("\n")) {
    if (line.length === 0) continue;
    const [id, price, qty, , time, buyerIsMaker] = line.split(",");
    const at = micros(Number(time));
    const hour = Math.min(23, Math.max(0, Math.floor((Number(time) - day) / HOUR_MS)));
    into[hour] += `${DATASET_EXCHANGE},${symbol},${at},${at},${id},${buyerIsMaker === "True" ? "sell" : "buy"},${price},${qty}\n`;
  }
  return into;
}

/** The trades of `trades` rows, as the feed sends them (the publisher's own trade id is not in the dataset: `id` is the venue's). */
export function tradesOfRows(text: string): WireTrade[] {
  const out: WireTrade[] = [];
  for (const line of text.split("\n")) {
    if (line.length === 0 || line.startsWith("exchange,")) continue;
    const [, , timestamp, , id, side, price, amount] = line.split(",");
    out.push({ tradeId: Number(id), id: id!, price: price!, quantity: amount!, side: side as WireTrade["side"], time: Number(timestamp!.slice(0, -3)) });
  }
  return out;
}

/**
 * The `trades` file's R2 metadata: where its header's gzip member ends, then where each of its 24
 * hours' members ends (hour h lies between the h-th and the next) — so a minute of the feed reads
 * one hour by one range read.
 */
export const TRADE_HOURS_METADATA = "hours";

/** The book as a day's rows need it: its best levels. */
export interface BookView {
  levels(depth: number): { bids: WireLevel[]; asks: WireLevel[] };
}

/** The rows of the book's three types so far, each type's text. */
export type BookRows = Record<BookDatasetType, string>;

/** What the rows of a segment need of those before: the last `quotes` and `book_snapshot_25` rows' levels (a row is written when they change). */
export interface BookCarry {
  quote: string;
  top: string;
}

/** An empty book's: nothing is written until the book has a level. */
export const EMPTY_CARRY: BookCarry = { quote: ",,,", top: Array.from({ length: SNAPSHOT_DEPTH }, () => ",,,").join(",") };

/**
 * The book's rows of a day, message by message: `incremental_book_L2` a row per changed level
 * (the day's opening book as `is_snapshot` rows), `book_snapshot_25` and `quotes` a row each time
 * the best 25 levels, or the best bid and ask, change.
 */
export class BookDayRows {
  readonly rows: BookRows = { incremental_book_L2: "", book_snapshot_25: "", quotes: "" };

  constructor(
    private readonly symbol: string,
    public carry: BookCarry,
  ) {}

  /** The book at the day's start: every level a snapshot row. */
  opening(book: BookView, time: number): void {
    const { bids, asks } = book.levels(Number.MAX_SAFE_INTEGER);
    this.levelRows(time, true, bids, asks);
    this.tops(book, time);
  }

  /** A message applied to `book`, with the levels it changed. */
  change(book: BookView, time: number, changed: { bids: readonly WireLevel[]; asks: readonly WireLevel[] }): void {
    this.levelRows(time, false, changed.bids, changed.asks);
    this.tops(book, time);
  }

  private levelRows(time: number, snapshot: boolean, bids: readonly WireLevel[], asks: readonly WireLevel[]): void {
    const at = micros(time);
    const head = `${DATASET_EXCHANGE},${this.symbol},${at},${at},${snapshot}`;
    let out = "";
    for (const [price, amount] of bids) out += `${head},bid,${price},${amount}\n`;
    for (const [price, amount] of asks) out += `${head},ask,${price},${amount}\n`;
    this.rows.incremental_book_L2 += out;
  }

  private tops(book: BookView, time: number): void {
    const at = micros(time);
    const { bids, asks } = book.levels(SNAPSHOT_DEPTH);
    const top = Array.from(
      { length: SNAPSHOT_DEPTH },
      (_, i) => `${asks[i]?.[0] ?? ""},${asks[i]?.[1] ?? ""},${bids[i]?.[0] ?? ""},${bids[i]?.[1] ?? ""}`,
    ).join(",");
    if (top !== this.carry.top) this.rows.book_snapshot_25 += `${DATASET_EXCHANGE},${this.symbol},${at},${at},${top}\n`;
    const quote = `${asks[0]?.[1] ?? ""},${asks[0]?.[0] ?? ""},${bids[0]?.[0] ?? ""},${bids[0]?.[1] ?? ""}`;
    if (quote !== this.carry.quote) this.rows.quotes += `${DATASET_EXCHANGE},${this.symbol},${at},${at},${quote}\n`;
    this.carry = { quote, top };
  }
}
