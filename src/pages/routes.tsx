/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import { ProblemError } from "../core/problem";
import type { MarketConfig } from "../domain/market-config";
import type { TickerRecord } from "../domain/rolling-window";
import type { AppEnv } from "../http/env";
import { resolveMarket } from "../market/lookup";
import { statusFigures } from "../metrics/venue-figures";
import { readVenue } from "../reads/edge-reads";
import { readContext, readMany, readMarketViews, readPrices, readTickerRecord } from "../reads/reads";
import { HeaderRow } from "./document";
import { Page } from "./page";
import type { VenueStatusBody } from "./status-page";
import { StatusPage } from "./status-page";

/**
 * The pages for people: `/` lists the markets live, `/markets/{pair}` shows one market live,
 * `/status` the venue's status. Server-rendered with their current numbers, then kept live by the
 * page's own script over `/api/ws` (the status page reloads itself). Everything is served by the
 * Worker itself: no CDN.
 */

/** Whether a ticker's market has traded (its last price is 0 until the first trade). */
const hasTraded = (t: TickerRecord) => /[1-9]/.test(t.lastPrice);
/** The landing page orders markets by 24 h quote volume valued in this asset. */
const VALUE_IN = "USDT";
const changeClass = (t: TickerRecord) => (t.changePercent24h.startsWith("-") ? "down" : Number(t.changePercent24h) > 0 ? "up" : "");
const signed = (percent: string) => `${percent.startsWith("-") ? "" : "+"}${percent}%`;

/** One market live: ticker, depth chart, ladder, tape and candles (kept live by `client/market.ts`). */
function MarketPage({ market, ticker }: { market: MarketConfig; ticker: TickerRecord }) {
  return (
    <Page title={`${market.base}/${market.quote}`} script="market.js">
      <div id="market" data-symbol={market.symbol}>
        <div id="ticker" class={changeClass(ticker)}>
          <h2 style="margin:0">
            {market.base}/{market.quote}
          </h2>
          <span class="price" data-ticker="lastPrice">
            {ticker.lastPrice}
          </span>
          <span>
            <span data-ticker="change24h">{ticker.change24h}</span> (<span data-ticker="changePercent24h">{ticker.changePercent24h}%</span>)
          </span>
          <span class="muted">
            high <span data-ticker="high24h">{ticker.high24h}</span> · low <span data-ticker="low24h">{ticker.low24h}</span> · volume{" "}
            <span data-ticker="volume24h">{ticker.volume24h}</span> {market.base}
          </span>
        </div>
        <div class="grid">
          <section>
            <h2>Depth</h2>
            <canvas id="depth"></canvas>
          </section>
          <section>
            <h2>
              Candles{" "}
              <select id="interval" aria-label="Candle interval">
                <option>1m</option>
              </select>
            </h2>
            <div id="candles" class="chart"></div>
          </section>
          <section id="book">
            <h2>
              Order book <span id="spread" class="muted"></span>
            </h2>
            <table>
              <thead>
                <HeaderRow names={[`price (${market.quote})`, `quantity (${market.base})`, "total"]} />
              </thead>
              <tbody id="ladder-asks"></tbody>
              <tbody id="ladder-bids"></tbody>
            </table>
          </section>
          <section>
            <h2>Trades</h2>
            <table>
              <thead>
                <HeaderRow names={["time (UTC)", "price", "quantity"]} />
              </thead>
              <tbody id="trades"></tbody>
            </table>
          </section>
        </div>
      </div>
    </Page>
  );
}

export const pageRoutes = new Hono<AppEnv>()
  .get("/", async (c) => {
    // Every listed market in one read of the all-market answer (one copy, however many markets).
    const listed = readMarketViews();
    const context = readContext(c);
    const [tickerRead, priceRead] = await Promise.all([readMany(context, undefined, { kind: "ticker" }), readPrices(context, { quote: VALUE_IN })]);
    const tickers = JSON.parse(tickerRead.text) as TickerRecord[];
    // A market that never traded shows dashes, not a price of 0; the busiest markets come first,
    // their 24 h quote volumes valued in USDT (a quote without a price to USDT counts 0).
    const bySymbol = new Map(tickers.filter(hasTraded).map((t) => [t.symbol, t]));
    const inUsdt = new Map((JSON.parse(priceRead.text) as { data: { asset: string; price: string }[] }).data.map((p) => [p.asset, Number(p.price)]));
    inUsdt.set(VALUE_IN, 1);
    const value = (market: { symbol: string; quote: string }) => {
      const ticker = bySymbol.get(market.symbol);
      return ticker ? Number(ticker.quoteVolume24h) * (inUsdt.get(market.quote) ?? 0) : -1;
    };
    const ordered = listed.map((market) => ({ market, value: value(market) })).sort((a, b) => b.value - a.value);
    return c.html(
      <Page title="Markets" script="landing.js">
        <p>
          Live market data for people and programs: REST and WebSocket (<code>/api/ws</code>), signed <code>/v1</code> access with API keys. Prices below move
          live over the same WebSocket any client can use; open a market for its order book, trades and candles.
        </p>
        <p>
          <input
            id="market-search"
            type="search"
            placeholder={`Search ${listed.length} markets (BTC, ETH-USDT…)`}
            aria-label="Search markets"
            autocomplete="off"
          />
        </p>
        <table id="markets">
          <tr>
            <th>market</th>
            <th>last price</th>
            <th>24 h change</th>
            <th>24 h volume</th>
            <th class="status">status</th>
          </tr>
          {ordered.map(({ market, value: valued }) => {
            const t = bySymbol.get(market.symbol);
            return (
              <tr data-symbol={market.symbol} data-value={valued}>
                <td>
                  <a href={`/markets/${market.symbol}`}>
                    {market.base}/{market.quote}
                  </a>
                </td>
                <td data-field="lastPrice">{t?.lastPrice ?? "–"}</td>
                <td data-field="change" class={t ? changeClass(t) : ""}>
                  {t ? signed(t.changePercent24h) : "–"}
                </td>
                <td data-field="volume">{t?.volume24h ?? "–"}</td>
                <td class="status">{market.status}</td>
              </tr>
            );
          })}
        </table>
      </Page>,
    );
  })
  .get("/markets/:pair", async (c) => {
    let ticker: TickerRecord;
    let market: MarketConfig;
    try {
      market = resolveMarket(c.req.param("pair"));
      ticker = await readTickerRecord(readContext(c), market.symbol);
    } catch (error) {
      if (!(error instanceof ProblemError)) throw error;
      return c.html(
        <Page title="Unknown market">
          <h2>{error.message}</h2>
          <p>
            <a href="/">All markets</a>
          </p>
        </Page>,
        error.status === 400 ? 400 : 404,
      );
    }
    return c.html(<MarketPage market={market} ticker={ticker} />);
  })
  .get("/status", async (c) => {
    const context = readContext(c);
    // The markets answer says since when each feed is silent (one all-market read, as the status).
    const [read, markets, figures] = await Promise.all([readVenue(context, "status"), readVenue(context, "markets"), statusFigures(c.env)]);
    const lastUpdates = new Map(
      (JSON.parse(markets.text) as { markets: { symbol: string; lastUpdateTime: number | null }[] }).markets.map((m) => [m.symbol, m.lastUpdateTime]),
    );
    return c.html(<StatusPage status={JSON.parse(read.text) as VenueStatusBody} lastUpdates={lastUpdates} figures={figures} />);
  });
