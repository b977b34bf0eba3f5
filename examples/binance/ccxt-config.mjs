// CCXT's `binance` options for this service's Binance dialect (docs/binance.md#ccxt), shared by the
// example (ccxt.mjs) and the e2e test that holds it to its word.

/**
 * EVERY URL CCXT's binance adapter knows, pointed at this service: CCXT merges what you give into
 * its own table, so one left out keeps pointing at the real Binance — its answers come from there
 * without an error, and a signed call sends the user's real keys there. Spot market data is the
 * dialect's (`/binance/api/v3`, `/binance/ws`, `/binance/ws-api/v3`); the accounts, margin,
 * futures, options and portfolio APIs are paths the dialect answers with Binance's `-1020` ("This
 * operation is not supported."), so `fetchBalance`, a margin call or a futures stream is refused
 * here at once. Sandbox (`setSandboxMode(true)`, the `test` URLs) and demo trading (the `demo`
 * URLs) point here too.
 * @param {string} base the service, e.g. `http://127.0.0.1:8787`
 */
export function ccxtConfig(base) {
  const dialect = `${base}/binance`;
  const ws = dialect.replace(/^http/, "ws");
  const rest = {
    public: `${dialect}/api/v3`,
    private: `${dialect}/api/v3`, // accounts and orders: -1020 here
    v1: `${dialect}/api/v1`,
    sapi: `${dialect}/sapi/v1`, // fetchStatus is served; the rest -1020
    sapiV2: `${dialect}/sapi/v2`,
    sapiV3: `${dialect}/sapi/v3`,
    sapiV4: `${dialect}/sapi/v4`,
    // Futures, options, portfolio margin: exchangeInfo says there are no such markets, the rest -1020.
    fapiPublic: `${dialect}/fapi/v1`,
    fapiPublicV2: `${dialect}/fapi/v2`,
    fapiPublicV3: `${dialect}/fapi/v3`,
    fapiPrivate: `${dialect}/fapi/v1`,
    fapiPrivateV2: `${dialect}/fapi/v2`,
    fapiPrivateV3: `${dialect}/fapi/v3`,
    fapiData: `${dialect}/futures/data`,
    dapiPublic: `${dialect}/dapi/v1`,
    dapiPrivate: `${dialect}/dapi/v1`,
    dapiPrivateV2: `${dialect}/dapi/v2`,
    dapiData: `${dialect}/futures/data`,
    eapiPublic: `${dialect}/eapi/v1`,
    eapiPrivate: `${dialect}/eapi/v1`,
    papi: `${dialect}/papi/v1`,
    papiV2: `${dialect}/papi/v2`,
  };
  const streams = {
    spot: `${ws}/ws`,
    margin: `${ws}/ws`, // Binance's margin streams are its spot address too
    // Not served: the upgrade is answered -1020 at once.
    future: `${ws}/fstream/ws`,
    delivery: `${ws}/dstream/ws`,
    stock: `${ws}/nbstream/equity/ws`,
    option: `${ws}/fstream/public/ws`,
    optionMarket: `${ws}/fstream/market/ws`,
    optionPrivate: `${ws}/fstream/private/ws`,
    papi: `${ws}/fstream/pm/ws`,
    "ws-api": { spot: `${ws}/ws-api/v3`, future: `${ws}/ws-fapi/v1`, delivery: `${ws}/ws-dapi/v1` },
  };
  const api = { ...rest, ws: streams };
  // Every request here counts one against the address's 10 a second, whatever Binance weighs it:
  // CCXT's cost of one Binance weight (0.2) on each endpoint, its book sizes and symbol-less calls
  // too, so a deep book (Binance's 250) or every ticker (80) waits 200 ms like any call, not 50 s.
  const one = { cost: 0.2, noSymbol: 0.2, byLimit: [[5000, 0.2]] };
  const paths = ["ping", "time", "exchangeInfo", "depth", "trades", "historicalTrades", "aggTrades", "klines", "uiKlines", "avgPrice"];
  const tickers = ["ticker/24hr", "ticker/tradingDay", "ticker", "ticker/price", "ticker/bookTicker"];
  const costs = { public: { get: Object.fromEntries([...paths, ...tickers].map((path) => [path, one])) }, sapi: { get: { "system/status": one } } };
  return {
    api: costs,
    urls: {
      api,
      test: api,
      demo: api,
      // Not called by CCXT, but a bot may show them: this service's pages, never Binance's.
      www: base,
      doc: `${base}/docs`,
      api_management: `${base}/dashboard`,
      fees: `${base}/docs`,
      referral: { url: base, discount: 0 },
    },
    // REST: with the costs above every call waits 0.2 × rateLimit = 200 ms (docs/binance.md#limits).
    rateLimit: 1000,
    options: {
      // Streams: CCXT waits `ws.cost` × rateLimit before each message it sends on a connection;
      // 0.25 s keeps it within the five messages a second a connection may send.
      ws: { cost: 0.25 },
      // All subscriptions on one connection (an address has five), up to 1024 streams on it.
      streamLimits: { spot: 1 },
      subscriptionLimitByStream: { spot: 1024 },
      // Spot markets only, as listed here: one request to load them (CCXT's default asks the
      // futures APIs too), and with keys set no margin pairs and no wallet currencies asked of
      // sapi (there are no accounts here: the markets' own currencies are the venue's).
      fetchMarkets: { types: ["spot"] },
      fetchMargins: false,
      fetchCurrencies: false,
    },
  };
}
