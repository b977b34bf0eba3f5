// A market's feed in the venue model's shape (docs/capacity.md#a-venue-2000-markets), for the
// benches that publish it: a book of `levels` a side around `mid`, then batches of five level
// changes and one trade at a notional every market's minimum admits.

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
    batch() {
      sequence += 1;
      n += 1;
      const bids = [];
      const asks = [];
      for (let c = 0; c < 5; c++)
        (c % 2 === 0 ? bids : asks).push([price(midUnits + (c % 2 === 0 ? -1 : 1) * (1 + ((n + c) % levels))), quantity(1000 + ((n + c) % 997))]);
      const trade = { id: `${symbol}-${n}`, price: price(midUnits), quantity: quantity(10), side: n % 2 ? "buy" : "sell", time: Date.now() };
      return { symbol, book: { type: "delta", sequence, bids, asks }, trades: [trade] };
    },
  };
}
