import { ServerClock } from "./clock.js";
import { MarketDataError } from "./errors.js";
import type { operations } from "./generated/openapi.js";
import { type BackoffOptions, backoffDelay, type Clock, RateLimitPacer, retryAfterMs, systemClock } from "./pacing.js";
import { sign } from "./signing.js";

/**
 * Every REST operation of the service that the client calls, by its OpenAPI `operationId`:
 * method and path. Paths under `/v1/` are signed. (The account, operator and gateway-callback
 * operations are for the dashboard, operators and gateways, not for market-data programs.)
 */
export const OPERATIONS = {
  getServerTime: ["GET", "/api/time"],
  listMarkets: ["GET", "/api/markets"],
  getStatus: ["GET", "/api/status"],
  getTicker: ["GET", "/api/ticker/{pair}"],
  listTickers: ["GET", "/api/ticker"],
  getBookTicker: ["GET", "/api/book-ticker/{pair}"],
  listBookTickers: ["GET", "/api/book-ticker"],
  getOrderBook: ["GET", "/api/orderbook/{pair}"],
  listTrades: ["GET", "/api/trades/{pair}"],
  listKlines: ["GET", "/api/klines/{pair}"],
  getWindowStats: ["GET", "/api/window/{pair}"],
  getTradingDay: ["GET", "/api/trading-day/{pair}"],
  getPrices: ["GET", "/api/prices"],
  signedGetTicker: ["GET", "/v1/ticker/24hr"],
  signedGetBookTicker: ["GET", "/v1/book-ticker"],
  signedGetOrderBook: ["GET", "/v1/orderbook"],
  signedListTrades: ["GET", "/v1/trades"],
  signedListKlines: ["GET", "/v1/klines"],
  signedGetPrices: ["GET", "/v1/prices"],
  signedListMarkets: ["GET", "/v1/markets"],
  ingestMarketData: ["POST", "/v1/ingest"],
} as const satisfies { [K in keyof operations]?: readonly ["GET" | "POST", string] };

export type OperationId = keyof typeof OPERATIONS;

type Defined<T> = [T] extends [never] ? Record<never, never> : [T] extends [undefined] ? Record<never, never> : NonNullable<T>;
/** Path and query parameters of an operation, in one object. */
export type Params<K extends OperationId> = Defined<operations[K]["parameters"]["path"]> & Defined<operations[K]["parameters"]["query"]>;
/** The JSON of an operation's 200 answer. */
export type Answer<K extends OperationId> = operations[K]["responses"][200]["content"]["application/json"];
/** The JSON body an operation takes, if any. */
export type Body<K extends OperationId> = operations[K] extends { requestBody: { content: { "application/json": infer B } } } ? B : never;

export interface ClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8787` (no trailing path). */
  baseUrl: string;
  /** API key id (`mk_…`) and its secret, for the signed `/v1` operations and streams. */
  apiKey?: string;
  secret?: string;
  /** `X-RECV-WINDOW` in ms (1–60000; the service's default is 5000). */
  recvWindow?: number;
  /** Measure the server clock's offset before the first signed call (default true). */
  syncTime?: boolean;
  /** Retries of an idempotent call after a 429, a 5xx or a network failure (default 3). */
  maxRetries?: number;
  /** Back-off for 5xx and network failures (default 250 ms doubling to 8 s, jittered). */
  backoff?: Partial<BackoffOptions>;
  /** Per-attempt timeout in ms (default 10 s). */
  timeoutMs?: number;
  /** Sent with every request (e.g. a `User-Agent`). */
  headers?: Record<string, string>;
  /** Injected for tests or other runtimes: `fetch`, the clock. */
  fetch?: typeof fetch;
  clock?: Clock;
}

/** Query values: lists (`symbols`, `assets`) may be given as arrays and are sent comma-separated. */
type Loose<T> = { [P in keyof T]: T[P] | (T[P] extends string | undefined ? readonly string[] : never) };

/**
 * The official client of the Market Data Service's REST API: one typed method per operation,
 * named by its `operationId`; signing, server-time correction and pacing are done for you, and
 * every failure is a {@link MarketDataError} with the service's `code`.
 *
 * @example
 * const client = new MarketDataClient({ baseUrl: "http://127.0.0.1:8787" });
 * const ticker = await client.getTicker({ pair: "BTCUSDT" });
 * console.log(ticker.lastPrice); // an exact decimal string
 */
export class MarketDataClient {
  readonly serverClock: ServerClock;
  readonly pacer: RateLimitPacer;
  private readonly clock: Clock;
  private readonly fetcher: typeof fetch;
  private readonly backoff: BackoffOptions;
  /** The server clock's measurement, shared by the signed calls that wait for it. */
  private timeSync: Promise<void> | undefined;

  constructor(readonly options: ClientOptions) {
    this.clock = options.clock ?? systemClock;
    this.serverClock = new ServerClock(this.clock);
    this.pacer = new RateLimitPacer(this.clock);
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
    this.backoff = { baseMs: 250, maxMs: 8000, random: Math.random, ...options.backoff };
  }

  /** `GET /api/time`: the server's time (Unix ms). */
  getServerTime(): Promise<Answer<"getServerTime">> {
    return this.call("getServerTime", {});
  }
  /** `GET /api/markets`: markets with their trading rules, assets and the rate limits. */
  listMarkets(): Promise<Answer<"listMarkets">> {
    return this.call("listMarkets", {});
  }
  /** `GET /api/status`: feed health — markets trading, halted and stale — and the server time. */
  getStatus(): Promise<Answer<"getStatus">> {
    return this.call("getStatus", {});
  }
  /** `GET /api/ticker/{pair}`: one market's 24 h ticker. */
  getTicker(params: Params<"getTicker">): Promise<Answer<"getTicker">> {
    return this.call("getTicker", params);
  }
  /** `GET /api/ticker`: tickers of the listed markets, or of `symbols`. */
  listTickers(params: Loose<Params<"listTickers">> = {}): Promise<Answer<"listTickers">> {
    return this.call("listTickers", params);
  }
  /** `GET /api/book-ticker/{pair}`: best bid and ask of one market. */
  getBookTicker(params: Params<"getBookTicker">): Promise<Answer<"getBookTicker">> {
    return this.call("getBookTicker", params);
  }
  /** `GET /api/book-ticker`: best bid and ask of every listed market, or of `symbols`. */
  listBookTickers(params: Loose<Params<"listBookTickers">> = {}): Promise<Answer<"listBookTickers">> {
    return this.call("listBookTickers", params);
  }
  /** `GET /api/orderbook/{pair}`: the book to `depth` levels a side, with `sequence` and `checksum`. */
  getOrderBook(params: Params<"getOrderBook">): Promise<Answer<"getOrderBook">> {
    return this.call("getOrderBook", params);
  }
  /** `GET /api/trades/{pair}`: recent trades, or a page by `fromId`, `before`, `startTime`, `endTime`. */
  listTrades(params: Params<"listTrades">): Promise<Answer<"listTrades">> {
    return this.call("listTrades", params);
  }
  /** `GET /api/klines/{pair}`: candles of an `interval` (1s … 1M), at a `timeZone`, over the market's whole history. */
  listKlines(params: Params<"listKlines">): Promise<Answer<"listKlines">> {
    return this.call("listKlines", params);
  }
  /** `GET /api/window/{pair}`: statistics of a rolling window, `windowSize` 1m–59m, 1h–23h, 1d–7d. */
  getWindowStats(params: Params<"getWindowStats">): Promise<Answer<"getWindowStats">> {
    return this.call("getWindowStats", params);
  }
  /** `GET /api/trading-day/{pair}`: statistics of the current trading day at a `timeZone`. */
  getTradingDay(params: Params<"getTradingDay">): Promise<Answer<"getTradingDay">> {
    return this.call("getTradingDay", params);
  }
  /** `GET /api/prices`: asset prices in a quote currency. */
  getPrices(params: Loose<Params<"getPrices">> = {}): Promise<Answer<"getPrices">> {
    return this.call("getPrices", params);
  }
  /** `GET /v1/ticker/24hr` (signed): one ticker for `symbol`, an array for `symbols`, all without either. */
  signedGetTicker(params: Loose<Params<"signedGetTicker">> = {}): Promise<Answer<"signedGetTicker">> {
    return this.call("signedGetTicker", params);
  }
  /** `GET /v1/book-ticker` (signed): best bid/ask, like {@link signedGetTicker} for one, many or all. */
  signedGetBookTicker(params: Loose<Params<"signedGetBookTicker">> = {}): Promise<Answer<"signedGetBookTicker">> {
    return this.call("signedGetBookTicker", params);
  }
  /** `GET /v1/orderbook` (signed). */
  signedGetOrderBook(params: Params<"signedGetOrderBook">): Promise<Answer<"signedGetOrderBook">> {
    return this.call("signedGetOrderBook", params);
  }
  /** `GET /v1/trades` (signed). */
  signedListTrades(params: Params<"signedListTrades">): Promise<Answer<"signedListTrades">> {
    return this.call("signedListTrades", params);
  }
  /** `GET /v1/klines` (signed). */
  signedListKlines(params: Params<"signedListKlines">): Promise<Answer<"signedListKlines">> {
    return this.call("signedListKlines", params);
  }
  /** `GET /v1/prices` (signed). */
  signedGetPrices(params: Loose<Params<"signedGetPrices">> = {}): Promise<Answer<"signedGetPrices">> {
    return this.call("signedGetPrices", params);
  }
  /** `GET /v1/markets` (signed). */
  signedListMarkets(): Promise<Answer<"signedListMarkets">> {
    return this.call("signedListMarkets", {});
  }
  /**
   * `POST /v1/ingest`, signed with a publishing key the operator issued for the market (an account's
   * key cannot publish): trades and book updates. A market outside the key's markets is a
   * `MarketDataError` with status 403 and code `FORBIDDEN_MARKET`. Not retried automatically, but
   * safe to resend: trade ids already stored and book updates already applied answer as duplicates.
   */
  ingestMarketData(body: Body<"ingestMarketData">): Promise<Answer<"ingestMarketData">> {
    return this.call("ingestMarketData", {}, body);
  }

  /**
   * Calls an operation by id. GETs are retried after a 429 (when the window frees a slot, as
   * `retryAfterMs`/`Retry-After` say), a 5xx or a network failure, up to `maxRetries` times with
   * jittered back-off; a signed call refused for its timestamp is re-signed once with the
   * server's time.
   */
  async call<K extends OperationId>(id: K, params: Loose<Params<K>> | Params<K>, body?: Body<K>): Promise<Answer<K>> {
    const [method, template] = OPERATIONS[id];
    const signed = template.startsWith("/v1/");
    const target = requestTarget(template, params as Record<string, unknown>);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const idempotent = method === "GET";
    const scope = signed ? "signed" : "public";
    const maxRetries = this.options.maxRetries ?? 3;
    let retimed = false;
    for (let attempt = 0; ; attempt++) {
      await this.pacer.ready(scope);
      const headers: Record<string, string> = { Accept: "application/json", ...this.options.headers };
      if (text !== undefined) headers["Content-Type"] = "application/json";
      if (signed) Object.assign(headers, await this.signatureHeaders(method, target, text ?? ""));
      let response: Response;
      try {
        response = await this.fetcher(this.options.baseUrl + target, {
          method,
          headers,
          body: text,
          signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
        });
      } catch (cause) {
        const timedOut = (cause as Error)?.name === "TimeoutError";
        const error = new MarketDataError(0, { code: timedOut ? "TIMEOUT" : "NETWORK_ERROR", detail: String((cause as Error)?.message ?? cause) });
        if (!idempotent || attempt >= maxRetries) throw error;
        await this.clock.sleep(backoffDelay(attempt + 1, this.backoff));
        continue;
      }
      this.pacer.observe(scope, response.headers);
      if (response.ok) return (await response.json()) as Answer<K>;
      const error = await MarketDataError.from(response);
      const wait = retryAfterMs(response.headers, error.problem, this.clock.now());
      if (error.code === "TIMESTAMP_OUT_OF_WINDOW" && typeof error.problem.serverTime === "number" && !retimed) {
        // Refused before anything was done, so even a POST may go again, re-signed on the server's time.
        this.serverClock.adopt(error.problem.serverTime);
        retimed = true;
        attempt -= 1;
        continue;
      }
      if (response.status === 429) this.pacer.refuse(scope, wait ?? 1000);
      const retryable = response.status === 429 || response.status >= 500;
      if (!retryable || !idempotent || attempt >= maxRetries) throw error;
      if (response.status !== 429) await this.clock.sleep(Math.max(wait ?? 0, backoffDelay(attempt + 1, this.backoff)));
    }
  }

  /** `X-API-KEY`, `X-TIMESTAMP`, `X-SIGNATURE` (and `X-RECV-WINDOW`) for a request. */
  async signatureHeaders(method: string, target: string, body = ""): Promise<Record<string, string>> {
    const { apiKey, secret, recvWindow } = this.options;
    if (!apiKey || !secret)
      throw new MarketDataError(0, { code: "MISSING_CREDENTIALS", detail: "signed operations need apiKey and secret in the client options" });
    await this.syncServerTime();
    const timestamp = this.serverClock.now();
    const signature = await sign(secret, { timestamp, method, requestTarget: target, body });
    return {
      "X-API-KEY": apiKey,
      "X-TIMESTAMP": String(timestamp),
      "X-SIGNATURE": signature,
      ...(recvWindow === undefined ? {} : { "X-RECV-WINDOW": String(recvWindow) }),
    };
  }

  /**
   * Measures the server clock once (unless `syncTime: false`): concurrent signed calls all wait
   * for the one measurement; a failed one is tried again by the next call.
   */
  syncServerTime(): Promise<void> {
    if (this.options.syncTime === false) return Promise.resolve();
    this.timeSync ??= this.serverClock
      .sync(async () => (await this.getServerTime()).serverTime)
      .then(
        () => undefined,
        (error: unknown) => {
          this.timeSync = undefined;
          throw error;
        },
      );
    return this.timeSync;
  }
}

/**
 * The path with its `{name}` parameters filled in and the others as the query, in the order
 * given; list values joined by `,`. This exact text is what a signed request signs.
 *
 * @example
 * requestTarget("/api/orderbook/{pair}", { pair: "BTCUSDT", depth: 10 }) // "/api/orderbook/BTCUSDT?depth=10"
 */
export function requestTarget(template: string, params: Record<string, unknown>): string {
  const used = new Set<string>();
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
    used.add(name);
    const value = params[name];
    if (value === undefined || value === null || value === "") throw new TypeError(`path parameter ${name} is required`);
    return encodeURIComponent(String(value));
  });
  const query: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (used.has(name) || value === undefined || value === null) continue;
    const text = Array.isArray(value) ? value.map((item) => encodeURIComponent(String(item))).join(",") : encodeURIComponent(String(value));
    query.push(`${encodeURIComponent(name)}=${text}`);
  }
  return query.length === 0 ? path : `${path}?${query.join("&")}`;
}
