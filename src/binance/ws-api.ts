import { BINANCE_ERRORS, type BinanceErrorName } from "./errors";

/**
 * Binance's WebSocket API (`/binance/ws-api/v3`, docs/binance.md#websocket-api), its requests
 * read as Binance reads them: each public market-data method is the REST dialect's endpoint
 * of the same name, asked with the same parameters, so its answer is the REST answer in
 * Binance's envelope. Pure: no I/O here (the connection is `ws-api-connection.ts`).
 */

/** Each public market-data method and the REST path under `/binance/api/v3/` answering it. */
export const WS_API_METHODS: Readonly<Record<string, string>> = {
  ping: "ping",
  time: "time",
  exchangeInfo: "exchangeInfo",
  depth: "depth",
  "trades.recent": "trades",
  "trades.historical": "historicalTrades",
  "trades.aggregate": "aggTrades",
  klines: "klines",
  uiKlines: "uiKlines",
  avgPrice: "avgPrice",
  "ticker.24hr": "ticker/24hr",
  "ticker.tradingDay": "ticker/tradingDay",
  ticker: "ticker",
  "ticker.price": "ticker/price",
  "ticker.book": "ticker/bookTicker",
};

/** A request's frame is at most this long: a market-data request is a few hundred bytes (200 symbols about 5 KiB). */
export const MAX_REQUEST_BYTES = 16 * 1024;
/** Symbols `ticker` takes over the WebSocket API (Binance's 200; its REST endpoint takes 100). */
export const WS_API_TICKER_SYMBOLS = 200;

/**
 * The REST requests the WebSocket API makes for its own requests (`ws-api-connection.ts`): a route
 * that answers the two differently (`ticker`'s symbols) asks here. Held weakly: a request is
 * forgotten once answered.
 */
export const wsApiRequests = new WeakSet<Request>();

export type RequestId = string | number | null;

/** A request read: the REST path and query that answer it, or Binance's error for it. */
export type WsApiRequest =
  | { id: RequestId; path: string; query: URLSearchParams; returnRateLimits: boolean | undefined }
  | { id: RequestId; error: { status: number; code: number; msg: string } };

const errorOf = (id: RequestId, name: BinanceErrorName, msg?: string): WsApiRequest => {
  const known = BINANCE_ERRORS[name];
  return { id, error: { status: known.status === 404 ? 400 : known.status, code: known.code, msg: msg || known.msg } };
};

/** A request id as Binance takes it: a string (≤ 36 characters here), an integer or null. */
function idOf(value: unknown): RequestId | undefined {
  if (value === null) return null;
  if (typeof value === "string" && value.length <= 36) return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  return undefined;
}

/** The id of a request frame refused before it is read (a refusal still names the request it answers); null when it has none. */
export function requestIdIn(text: string): RequestId {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return null;
  }
  if (frame === null || typeof frame !== "object") return null;
  return idOf((frame as { id?: unknown }).id) ?? null;
}

/** A parameter's value as the REST query takes it: arrays (`symbols`, `permissions`) as JSON, scalars as text. */
function queryValue(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return JSON.stringify(value);
  return undefined;
}

/**
 * Reads one text frame: `{id, method, params?}`. A method may carry Binance's `v3/` prefix. An
 * unknown or private method (orders, accounts, sessions: not part of this venue) is -1020.
 */
export function readRequest(text: string): WsApiRequest {
  if (text.length > MAX_REQUEST_BYTES) return errorOf(null, "ILLEGAL_CHARS", `A request is at most ${MAX_REQUEST_BYTES} bytes.`);
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return errorOf(null, "ILLEGAL_CHARS", "Malformed request: not JSON.");
  }
  if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return errorOf(null, "ILLEGAL_CHARS", "Malformed request: not a JSON object.");
  const { id: rawId, method, params = {} } = frame as { id?: unknown; method?: unknown; params?: unknown };
  const id = idOf(rawId);
  if (id === undefined) return errorOf(null, "MANDATORY_PARAM_EMPTY_OR_MALFORMED", "Mandatory parameter 'id' was not sent, was empty/null, or malformed.");
  if (typeof method !== "string" || method === "")
    return errorOf(id, "MANDATORY_PARAM_EMPTY_OR_MALFORMED", "Mandatory parameter 'method' was not sent, was empty/null, or malformed.");
  const name = method.replace(/^v3\//, "");
  // Own names only: `toString` is a name every object answers, not a method.
  const path = Object.hasOwn(WS_API_METHODS, name) ? WS_API_METHODS[name] : undefined;
  if (path === undefined) {
    return errorOf(
      id,
      "UNSUPPORTED_OPERATION",
      `Unknown method '${method}': this venue's WebSocket API has its public market data only (docs/binance.md#websocket-api).`,
    );
  }
  if (params === null || typeof params !== "object" || Array.isArray(params))
    return errorOf(id, "ILLEGAL_CHARS", "Malformed request: 'params' is not an object.");
  const query = new URLSearchParams();
  let returnRateLimits: boolean | undefined;
  for (const [name, value] of Object.entries(params)) {
    if (name === "returnRateLimits") {
      if (typeof value !== "boolean")
        return errorOf(id, "ILLEGAL_CHARS", "Illegal characters found in parameter 'returnRateLimits'; legal range is 'true, false'.");
      returnRateLimits = value;
      continue;
    }
    const text = queryValue(value);
    if (text === undefined) return errorOf(id, "ILLEGAL_CHARS", `Illegal characters found in parameter '${name}'.`);
    query.set(name, text);
  }
  return { id, path, query, returnRateLimits };
}

/** Binance's `rateLimits` entry for this venue's public limit, from the REST answer's `RateLimit-*` headers. */
export function rateLimitsOf(headers: Headers): { rateLimitType: "REQUEST_WEIGHT"; interval: "SECOND"; intervalNum: 1; limit: number; count: number }[] {
  const limit = Number(headers.get("RateLimit-Limit"));
  const remaining = Number(headers.get("RateLimit-Remaining"));
  if (!Number.isFinite(limit) || limit <= 0 || !Number.isFinite(remaining)) return [];
  return [{ rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit, count: Math.max(0, limit - remaining) }];
}

/** Binance's error body as the REST dialect sends it; anything else (a problem document from before the dialect) is none. */
function binanceBody(body: unknown): body is { code: number; msg: string } {
  const b = body as { code?: unknown; msg?: unknown } | null;
  return b !== null && typeof b === "object" && typeof b.code === "number" && typeof b.msg === "string";
}

/** The Binance error a status stands for when the body is not one: 429 -1003, 5xx -1001, else -1000. */
function errorForStatus(status: number): { code: number; msg: string } {
  const name: BinanceErrorName = status === 429 || status === 418 ? "TOO_MANY_REQUESTS" : status >= 500 ? "DISCONNECTED" : "UNKNOWN";
  const known = BINANCE_ERRORS[name];
  return { code: known.code, msg: known.msg || "Too many requests." };
}

/**
 * The answer's frame: `{id, status, result}` for a 200, `{id, status, error: {code, msg}}`
 * otherwise (the REST dialect's error body, or Binance's error for the status), each with
 * `rateLimits` unless asked not to; a 429 carries Binance's `data: {serverTime, retryAfter}`
 * (Unix ms) when the wait is known.
 */
export function answerFrame(id: RequestId, status: number, body: unknown, rateLimits: unknown[] | undefined, retryAfterMs?: number, now = Date.now()): string {
  const limits = rateLimits ? { rateLimits } : {};
  if (status === 200) return JSON.stringify({ id, status, result: body, ...limits });
  const error = binanceBody(body) ? { code: body.code, msg: body.msg } : errorForStatus(status);
  const data = retryAfterMs !== undefined && (status === 429 || status === 418) ? { data: { serverTime: now, retryAfter: now + retryAfterMs } } : {};
  return JSON.stringify({ id, status, error: { ...error, ...data }, ...limits });
}

/**
 * `answerFrame` of a 200 whose result is JSON text already (the REST answer as its route wrote it):
 * the same frame, without parsing a deep book's text into objects and writing it out again.
 *
 * @example
 * server.send(resultFrame(request.id, await response.text(), limits()));
 */
export function resultFrame(id: RequestId, resultText: string, rateLimits: unknown[] | undefined): string {
  return `{"id":${JSON.stringify(id)},"status":200,"result":${resultText}${rateLimits ? `,"rateLimits":${JSON.stringify(rateLimits)}` : ""}}`;
}
