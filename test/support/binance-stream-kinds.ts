/** A market's Binance stream kinds but the candles: `${symbol}@${kind}` (docs/binance.md#streams). */
export const BINANCE_STREAM_KINDS = [
  "trade",
  "aggTrade",
  "depth",
  "depth@100ms",
  "bookTicker",
  "ticker",
  "miniTicker",
  "avgPrice",
  "depth5",
  "depth10",
  "depth20",
  "depth5@100ms",
  "depth10@100ms",
  "depth20@100ms",
] as const;
