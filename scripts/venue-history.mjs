// The past of a venue's markets, generated and imported through `POST /admin/markets/{pair}/history/klines`
// (docs/history.md#import): `npm run venue -- --history 365` gives every default market a year of
// one-minute candles that ends where its live trades begin, so a newcomer's chart has history.
// The walk is seeded by the symbol: running it twice imports the same minutes again (replaced).

const MINUTE_MS = 60_000;
/** Rows a request: about 3 MB of JSON, well inside the route's 8 MiB. */
const ROWS_PER_REQUEST = 20_000;

/** A small seeded generator (mulberry32): the same symbol walks the same way every time. */
function random(seedText) {
  let seed = [...seedText].reduce((h, ch) => Math.imul(h ^ ch.charCodeAt(0), 16_777_619), 2_166_136_261) >>> 0;
  return () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Integer units at `scale` as a decimal string. */
function format(units, scale) {
  if (scale === 0) return units.toString();
  const text = units.toString().padStart(scale + 1, "0");
  return `${text.slice(0, -scale)}.${text.slice(-scale)}`;
}

/**
 * Minutes of one market from `from` to `to` (exclusive), walking backwards from `endPrice` so the
 * history meets the live price. Kline rows in Binance's order, exact at the market's scales.
 */
export function generatedRows(market, from, to, endPrice) {
  const next = random(market.symbol);
  const { priceScale: ps, quantityScale: qs } = market;
  const minutes = Math.floor((to - from) / MINUTE_MS);
  const rows = new Array(minutes);
  let close = endPrice;
  for (let i = minutes - 1; i >= 0; i--) {
    const openTime = from + i * MINUTE_MS;
    // A walk of about 0.05 % a minute (≈ 70 % a year), with a gentle pull back to the end price.
    const open = close * (1 + (next() - 0.5) * 0.001 + (endPrice / close - 1) * 0.00002);
    const high = Math.max(open, close) * (1 + next() * 0.0004);
    const low = Math.min(open, close) * (1 - next() * 0.0004);
    const toUnits = (price) => BigInt(Math.max(1, Math.round(price * 10 ** ps)));
    const [o, h, l, c] = [open, high, low, close].map(toUnits);
    const volume = BigInt(Math.round((0.1 + next() * 5) * 10 ** qs)) + 1n;
    const buy = (volume * BigInt(Math.round(next() * 100))) / 100n;
    const count = 1 + Math.floor(next() * 60);
    const hi = [o, h, l, c].reduce((m, v) => (v > m ? v : m));
    const lo = [o, h, l, c].reduce((m, v) => (v < m ? v : m));
    rows[i] = [
      openTime,
      format(o, ps),
      format(hi, ps),
      format(lo, ps),
      format(c, ps),
      format(volume, qs),
      openTime + MINUTE_MS - 1,
      format(volume * c, ps + qs),
      count,
      format(buy, qs),
      format(buy * c, ps + qs),
      "0",
    ];
    close = open;
  }
  return rows;
}

/**
 * Imports `days` of generated minutes for every listed market named in `symbols` (all that trade,
 * by default), each ending at its first live minute (or now), and returns what was imported.
 * @param {{ url: string, token: string, days: number, symbols?: string[], log?: (line: string) => void }} options
 */
export async function importHistory({ url, token, days, symbols, log = () => {} }) {
  const { markets } = await (await fetch(`${url}/api/markets`)).json();
  const chosen = markets.filter((m) => m.status === "TRADING" && (symbols ? symbols.includes(m.symbol) : !/^V\d+/.test(m.base)));
  const results = [];
  for (const market of chosen) {
    // The oldest live minute: history stops there, as an import never replaces live trades.
    const [first] = await (await fetch(`${url}/api/klines/${market.symbol}?interval=1m&startTime=0&limit=1`)).json();
    const end = first ? first.openTime : Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS;
    const ticker = await (await fetch(`${url}/api/ticker/${market.symbol}`)).json();
    const endPrice = Number(first?.open ?? ticker.lastPrice) || 10 ** Math.min(3, market.priceScale);
    const from = end - days * 1_440 * MINUTE_MS;
    const rows = generatedRows(market, from, end, endPrice);
    let imported = 0;
    for (let i = 0; i < rows.length; i += ROWS_PER_REQUEST) {
      const response = await fetch(`${url}/admin/markets/${market.symbol}/history/klines`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ interval: "1m", rows: rows.slice(i, i + ROWS_PER_REQUEST) }),
      });
      const answer = await response.json();
      if (response.status !== 200) throw new Error(`${market.symbol}: ${response.status} ${JSON.stringify(answer)}`);
      imported += answer.imported;
    }
    log(`${market.symbol}: ${imported} minutes from ${new Date(from).toISOString().slice(0, 10)} to ${new Date(end).toISOString().slice(0, 16)}Z`);
    results.push({ symbol: market.symbol, imported, from, to: end });
  }
  return results;
}
