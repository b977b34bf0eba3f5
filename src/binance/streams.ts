/**
 * The Binance stream names and control messages (docs/binance.md#streams), pure: which native
 * stream a Binance name reads, and what a client's SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS
 * asks. The StreamHub applies it; `fanout.ts` renders the events.
 */
import { isKlineInterval } from "../domain/intervals";
import { findMarket } from "../registry/copy";
import { parseStreamName, type StreamName, TICKERS_STREAM } from "../streams/protocol";

/** Binance's streams per connection, whatever their names (MAX_STREAM_NAME_BYTES holds 1,024 of the longest). */
export const BINANCE_MAX_STREAMS = 1024;
/** Longest stream name (`parseBinanceStream`). */
const MAX_NAME_LENGTH = 64;
/**
 * A control message's bytes: a SUBSCRIBE naming all 1024 streams at their longest, quoted and
 * comma-separated, with its method and id (Binance states no size; its 1024 streams in one message work).
 */
export const BINANCE_MAX_MESSAGE_BYTES = BINANCE_MAX_STREAMS * (MAX_NAME_LENGTH + 3) + 1024;

type ViewKind =
  | "trade"
  | "aggTrade"
  | "kline"
  | "miniTicker"
  | "ticker"
  | "windowTicker"
  | "avgPrice"
  | "bookTicker"
  | "depthDiff"
  | "depthPartial"
  | "allMiniTickers"
  | "allTickers"
  | "allWindowTickers";

export interface BinanceStream {
  /** As the client wrote it (lower-case symbol): the name LIST_SUBSCRIPTIONS and combined frames carry. */
  name: string;
  kind: ViewKind;
  /** The native stream it is made from. */
  native: StreamName;
  /** Levels of a partial book. */
  levels?: number;
  /** The rolling window of a window ticker (`1h`, `4h`, `1d`). */
  window?: string;
  /** Binance's update speed when slower than the native stream's: `@depth` and `@depthN` are 1000 ms unless `@100ms`. */
  paceMs?: number;
}

/** Binance's default update speed of the depth streams; `@100ms` is the native stream's own pace. */
export const DEPTH_PACE_MS = 1000;

const SIMPLE: Record<string, { kind: ViewKind; native: (symbol: string) => string; paceMs?: number }> = {
  trade: { kind: "trade", native: (s) => `trades.${s}` },
  aggTrade: { kind: "aggTrade", native: (s) => `trades.${s}` },
  miniTicker: { kind: "miniTicker", native: (s) => `ticker.${s}` },
  ticker: { kind: "ticker", native: (s) => `ticker.${s}` },
  bookTicker: { kind: "bookTicker", native: (s) => `bookTicker.${s}` },
  avgPrice: { kind: "avgPrice", native: (s) => `avgPrice.${s}` },
  depth: { kind: "depthDiff", native: (s) => `book.${s}`, paceMs: DEPTH_PACE_MS },
  "depth@100ms": { kind: "depthDiff", native: (s) => `book.${s}` },
  "depth@1000ms": { kind: "depthDiff", native: (s) => `book.${s}`, paceMs: DEPTH_PACE_MS },
};

/**
 * `btcusdt@trade`, `btcusdt@aggTrade`, `btcusdt@kline_1m[@+08:00]`, `btcusdt@miniTicker`, `btcusdt@ticker`,
 * `btcusdt@ticker_<1h|4h|1d>`, `btcusdt@avgPrice`, `btcusdt@bookTicker`, `btcusdt@depth[@100ms]`,
 * `btcusdt@depth<5|10|20>[@100ms]`, `!miniTicker@arr`, `!ticker@arr`, `!ticker_<1h|4h|1d>@arr`.
 * Symbols in lower case, as Binance writes them; null for anything else.
 */
export function parseBinanceStream(raw: unknown): BinanceStream | null {
  if (typeof raw !== "string" || raw.length > MAX_NAME_LENGTH) return null;
  if (raw === "!miniTicker@arr" || raw === "!ticker@arr") {
    const native = parseStreamName(TICKERS_STREAM);
    return native && { name: raw, kind: raw === "!ticker@arr" ? "allTickers" : "allMiniTickers", native };
  }
  const allWindows = /^!ticker_(1h|4h|1d)@arr$/.exec(raw);
  if (allWindows) {
    const stream = nameFor(raw, "allWindowTickers", `${TICKERS_STREAM}.${allWindows[1]}`);
    return stream && { ...stream, window: allWindows[1] };
  }
  const at = raw.indexOf("@");
  if (at <= 0) return null;
  const lower = raw.slice(0, at);
  if (lower !== lower.toLowerCase()) return null;
  const market = findMarket(lower.toUpperCase());
  if (!market || market.status === "DELISTED") return null;
  const rest = raw.slice(at + 1);
  const simple = Object.hasOwn(SIMPLE, rest) ? SIMPLE[rest] : undefined; // own kinds only: `@toString` is no stream
  if (simple) {
    const stream = nameFor(raw, simple.kind, simple.native(market.symbol));
    return stream && simple.paceMs ? { ...stream, paceMs: simple.paceMs } : stream;
  }
  const kline = /^kline_(\w+)(@\+08:00)?$/.exec(rest);
  if (kline) return isKlineInterval(kline[1]!) ? nameFor(raw, "kline", `kline.${market.symbol}.${kline[1]}${kline[2] ?? ""}`) : null;
  const window = /^ticker_(1h|4h|1d)$/.exec(rest);
  if (window) {
    const stream = nameFor(raw, "windowTicker", `ticker.${market.symbol}.${window[1]}`);
    return stream && { ...stream, window: window[1] };
  }
  const partial = /^depth(5|10|20)(@100ms|@1000ms)?$/.exec(rest);
  if (partial) {
    const stream = nameFor(raw, "depthPartial", `book.${market.symbol}`);
    return stream && { ...stream, levels: Number(partial[1]), ...(partial[2] === "@100ms" ? {} : { paceMs: DEPTH_PACE_MS }) };
  }
  return null;
}

function nameFor(name: string, kind: ViewKind, nativeName: string): BinanceStream | null {
  const native = parseStreamName(nativeName);
  return native && { name, kind, native };
}

export type BinanceId = number | string | null;

export type BinanceRequest =
  | { method: "SUBSCRIBE" | "UNSUBSCRIBE"; id: BinanceId; params: string[] }
  | { method: "LIST_SUBSCRIPTIONS"; id: BinanceId }
  | { method: "SET_PROPERTY"; id: BinanceId; property: string; value: unknown }
  | { method: "GET_PROPERTY"; id: BinanceId; property: string };

/** Binance's error answer: code 0 unknown property, 1 bad value type, 2 invalid request, 3 invalid JSON. */
export interface BinanceStreamError {
  error: { code: 0 | 1 | 2 | 3; msg: string };
  id: BinanceId;
}

const METHODS = ["SUBSCRIBE", "UNSUBSCRIBE", "LIST_SUBSCRIPTIONS", "SET_PROPERTY", "GET_PROPERTY"];

function fail(code: 0 | 1 | 2 | 3, msg: string, id: BinanceId = null): { ok: false; answer: BinanceStreamError } {
  return { ok: false, answer: { error: { code, msg }, id } };
}

/** A client message as Binance reads it: the request, or the error answer to send. */
export function parseBinanceRequest(text: string): { ok: true; request: BinanceRequest } | { ok: false; answer: BinanceStreamError } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(3, "Invalid JSON: expected value at line 1 column 1");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail(2, "Invalid request: expected an object with method, params and id");
  const message = value as Record<string, unknown>;
  const rawId = message.id;
  const idOk =
    rawId === null ||
    rawId === undefined ||
    (typeof rawId === "number" && Number.isSafeInteger(rawId)) ||
    (typeof rawId === "string" && /^[A-Za-z0-9-]{1,36}$/.test(rawId));
  if (!idOk) return fail(2, "Invalid request: request ID must be an unsigned integer");
  const id = (rawId ?? null) as BinanceId;
  const method = message.method;
  if (method === undefined) return fail(2, "Invalid request: missing field `method`", id);
  if (typeof method !== "string" || !METHODS.includes(method)) {
    return fail(
      2,
      `Invalid request: unknown variant ${JSON.stringify(method)?.slice(0, 40)}, expected one of ${METHODS.map((m) => `\`${m}\``).join(", ")}`,
      id,
    );
  }
  const params = message.params;
  switch (method) {
    case "SUBSCRIBE":
    case "UNSUBSCRIBE":
      if (!Array.isArray(params) || !params.every((p) => typeof p === "string")) return fail(2, "Invalid request: params must be an array of stream names", id);
      if (params.length > BINANCE_MAX_STREAMS) return fail(2, "Invalid request: too many parameters", id);
      return { ok: true, request: { method, id, params } };
    case "LIST_SUBSCRIPTIONS":
      return { ok: true, request: { method, id } };
    default: {
      if (!Array.isArray(params) || typeof params[0] !== "string") return fail(2, "Invalid request: property name must be a string", id);
      if (params[0] !== "combined") return fail(0, "Unknown property", id);
      if (method === "GET_PROPERTY") return { ok: true, request: { method, id, property: params[0] } };
      if (typeof params[1] !== "boolean") return fail(1, "Invalid value type: expected Boolean", id);
      return { ok: true, request: { method: "SET_PROPERTY", id, property: params[0], value: params[1] } };
    }
  }
}

/** The stream names of a raw connection's path (`/binance/ws/a/b`) or a combined one's `streams=a/b`. */
export function namesIn(list: string): string[] {
  return list
    .split("/")
    .filter((name) => name !== "")
    .slice(0, BINANCE_MAX_STREAMS + 1);
}
