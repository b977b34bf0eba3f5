/**
 * The exchange's details as Tardis describes one (docs/tardis.md#exchange-details): the listed
 * markets with the day each was listed, the feed's channels, and the datasets' days. The listing
 * days are one D1 read of the markets (a row a market), kept by the isolate for a minute.
 */

import { DAY_MS, MINUTE_MS } from "../domain/intervals";
import { DATASET_TYPES } from "../history/datasets";
import { currentRegistry } from "../registry/copy";

const KEEP_MS = MINUTE_MS;
let listed: { at: number; days: Map<string, number> } | undefined;

/** Each market's listing moment, from D1 at most once a minute an isolate. */
export async function listingTimes(db: D1Database): Promise<Map<string, number>> {
  if (listed && Date.now() - listed.at < KEEP_MS) return listed.days;
  const { results } = await db.prepare("SELECT symbol, listed_at FROM markets").all<{ symbol: string; listed_at: number }>();
  listed = { at: Date.now(), days: new Map(results.map((row) => [row.symbol, row.listed_at])) };
  return listed.days;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** What `GET /tardis/v1/exchanges/binance` answers. */
export async function exchangeDetails(env: Env, id: string, channels: readonly string[]) {
  const times = await listingTimes(env.DB);
  const markets = currentRegistry().listed;
  const since = (symbol: string) => times.get(symbol) ?? Date.now();
  const first = markets.reduce((least, m) => Math.min(least, since(m.symbol)), Date.now());
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  return {
    id,
    name: "Binance dialect of this venue",
    enabled: true,
    filterable: true,
    availableSince: iso(first),
    availableChannels: channels,
    availableSymbols: markets.map((m) => ({ id: m.symbol.toLowerCase(), type: "spot", availableSince: iso(since(m.symbol)), name: `${m.base}/${m.quote}` })),
    incidentReports: [],
    supportsDatasets: true,
    datasets: {
      formats: ["csv"],
      dataTypes: DATASET_TYPES,
      // A day's files are built after it ends (docs/tardis.md#datasets); a day not built yet is 404.
      exportedFrom: iso(Math.floor(first / DAY_MS) * DAY_MS),
      exportedUntil: iso(today),
      symbols: markets.map((m) => ({ id: m.symbol, type: "spot", availableSince: iso(since(m.symbol)), availableTo: iso(today) })),
    },
  };
}
