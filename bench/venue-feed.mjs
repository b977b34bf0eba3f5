// A market's feed for the benches that publish: a book of `levels` a side around `mid`, then
// batches of the venue model's shape by default (five level changes and a trade,
// docs/capacity.md#a-venue-2000-markets) at a notional every market's minimum admits.

/**
 * @example
 * const market = venueFeed("V0USDT", 2, 3, 100, 100);
 * await channel.send(market.snapshot());
 * await channel.send(market.batch());
 */
export function venueFeed(symbol, priceScale, quantityScale, mid, levels) {
  const unit = 10 ** priceScale;
  const price = (units) => (units / unit).toFixed(priceScale);
  const quantity = (n) => (n / 10 ** quantityScale).toFixed(quantityScale);
  const midUnits = Math.round(mid * unit);
  let sequence = 0;
  let n = 0;
  let tradeN = 0;
  return {
    symbol,
    get sequence() {
      return sequence;
    },
    snapshot() {
      sequence += 1;
      const side = (sign) => Array.from({ length: levels }, (_, i) => [price(midUnits + sign * (1 + i)), quantity(1000 + i)]);
      return { symbol, book: { type: "snapshot", sequence, bids: side(-1), asks: side(1) } };
    },
    /** A delta of `changes` levels (alternately bid and ask) and `trades` trades at the mid. */
    batch(changes = 5, trades = 1) {
      sequence += 1;
      const bids = [];
      const asks = [];
      for (let c = 0; c < changes; c++) {
        n += 1;
        (c % 2 === 0 ? bids : asks).push([price(midUnits + (c % 2 === 0 ? -1 : 1) * (1 + (n % levels))), quantity(1000 + (n % 997))]);
      }
      const time = Date.now();
      const made = Array.from({ length: trades }, () => ({
        id: `${symbol}-${++tradeN}`,
        price: price(midUnits),
        quantity: quantity(10),
        side: tradeN % 2 ? "buy" : "sell",
        time,
      }));
      return { symbol, book: { type: "delta", sequence, bids, asks }, trades: made };
    },
  };
}
