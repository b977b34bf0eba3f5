/**
 * A market's day as Tardis's CSV datasets (docs/tardis.md#datasets), pure: the types, their R2
 * keys and their columns. Timestamps in microseconds since the epoch, as Tardis writes them.
 */

/** The day's datasets served, as `downloadDatasets` names them. */
export const DATASET_TYPES = ["trades", "incremental_book_L2", "book_snapshot_25", "quotes"] as const;
export type DatasetType = (typeof DATASET_TYPES)[number];

/** `tardis/datasets/binance/trades/2026/12/06/BTCUSDT.csv.gz`: the path `downloadDatasets` asks for, under the bucket's prefix. */
export function datasetKey(exchange: string, type: DatasetType, day: number, symbol: string): string {
  const [y, m, d] = new Date(day).toISOString().slice(0, 10).split("-");
  return `tardis/datasets/${exchange}/${type}/${y}/${m}/${d}/${symbol}.csv.gz`;
}
