// CCXT's `binance` options for this service's Binance dialect (docs/binance.md#ccxt), shared by the
// example (ccxt.mjs) and the e2e test that holds it to its word.

/**
 * Every URL CCXT's spot market data uses: one left out keeps pointing at the real Binance, and its
 * answers would come from there without an error.
 * @param {string} base the service, e.g. `http://127.0.0.1:8787`
 */
export function ccxtConfig(base) {
  const dialect = `${base}/binance`;
  const ws = dialect.replace(/^http/, "ws");
  return {
    urls: {
      api: {
        public: `${dialect}/api/v3`,
        sapi: `${dialect}/sapi/v1`,
        // CCXT asks for futures markets too when it loads markets: the dialect answers that there are none.
        fapiPublic: `${dialect}/fapi/v1`,
        dapiPublic: `${dialect}/dapi/v1`,
        ws: { spot: `${ws}/ws`, "ws-api": { spot: `${ws}/ws-api/v3` } },
      },
    },
    // Every request counts 1 against 10 a second per address here; CCXT weighs a Binance weight of 1 as 0.2 of rateLimit.
    rateLimit: 1000,
    // All subscriptions on one connection (an address has five), up to 1024 streams on it.
    options: { streamLimits: { spot: 1 }, subscriptionLimitByStream: { spot: 1024 } },
  };
}
