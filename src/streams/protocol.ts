import { parseSymbol } from "../core/symbols";
import { isKlineInterval, KLINE_INTERVALS, offsetMoves, STREAM_OFFSET_MS, STREAM_TIME_ZONE } from "../domain/intervals";
import { listedMarket } from "../market/lookup";
import { quoteAssets } from "../registry/copy";

/**
 * The WebSocket protocol of docs/streams.md, pure: stream names, client messages, the plans
 * for subscribe / unsubscribe and the inbound limits. The StreamHub applies what this decides.
 */
export const MAX_STREAMS_PER_CONNECTION = 50;
/**
 * What a connection's stream names may take, packed (./attachment.ts): a dialect allowing more
 * streams (Binance's 1024) is bounded by this too, and so is the shard's memory per socket — 1,024
 * names of 64 bytes each. Past the attachment's budget they are kept in the shard's storage.
 */
export const MAX_STREAM_NAME_BYTES = 1024 * 65;
export const MAX_MESSAGE_BYTES = 4096;
export const MAX_MESSAGES_PER_SECOND = 10;
/** Non-JSON or malformed messages tolerated (each answered with an error) before closing. */
export const MAX_WARNINGS = 3;
export const MAX_CONNECTIONS_PER_PRINCIPAL = 5;
/** WebSocket close code for abuse (RFC 6455 "policy violation"). */
export const POLICY_VIOLATION = 1008;
/**
 * The heartbeat the runtime answers by itself, without waking a hibernated shard. The
 * JSON `{"op":"ping"}` is answered by the shard with `{"op":"pong","time":…}` (a time
 * cannot be part of a fixed auto-response), so the zero-cost keepalive is this bare text frame.
 */
export const KEEPALIVE_REQUEST = "ping";
export const KEEPALIVE_RESPONSE = "pong";

const STREAM_KINDS = ["ticker", "bookTicker", "trades", "book", "kline", "avgPrice", "prices", "tickers", "heartbeat", "status"] as const;
/** The rolling windows streamed besides the 24 h ticker (`ticker.{SYMBOL}.{window}`, `tickers.{window}`), as Binance's. */
export const TICKER_WINDOWS = ["1h", "4h", "1d"] as const;
export type TickerWindow = (typeof TICKER_WINDOWS)[number];
/** The server heartbeat: one name, no subject (docs/streams.md). */
export const HEARTBEAT_STREAM = "heartbeat";
/** The venue's status and announcements, pushed when they change: one name, no subject (docs/operations.md#announcements). */
export const STATUS_STREAM = "status";
/** A dialect's connections are told of a maintenance this long before it starts (at once when it starts sooner). */
export const MAINTENANCE_NOTICE_LEAD_MS = 60_000;
/** Every market's changed tickers, at most once a second: one name, no subject (docs/streams.md). */
export const TICKERS_STREAM = "tickers";
export const HEARTBEAT_EVERY_MS = 5_000;
/** A key's first stream connection on a shard is checked this long after it opened (it learns the key's expiry then). */
export const KEY_CHECK_EVERY_MS = 10_000;
/**
 * Then the shard checks its keys this often, and at the moment one expires: a revocation reaches
 * it at once from the key's guard (`keyEnded`), so this check is the backstop for a revocation it
 * missed and the bound of failing closed (docs/streams.md#closes-and-ended-streams). One guard call
 * a key a minute, not every 10 s: at 20,000 signed subscribers 333 calls a second, not 2,000.
 */
export const KEY_RECHECK_EVERY_MS = 60_000;
/** Not a stream: a market's object says down its streams' channel that it was delisted, and shards end its streams. */
export const MARKET_ENDED_STREAM = "!ended";
type StreamKind = (typeof STREAM_KINDS)[number];

function isStreamKind(kind: string): kind is StreamKind {
  return (STREAM_KINDS as readonly string[]).includes(kind);
}

export interface StreamName {
  /** Canonical name: `book.BTCUSDT`, `prices.USDT`. */
  name: string;
  kind: StreamKind;
  /** A market symbol, or a quote asset for `prices`. */
  subject: string;
}

/**
 * `ticker.BTCUSDT`, `bookTicker.BTCUSDT`, `trades.BTCUSDT`, `book.BTCUSDT`, `kline.BTCUSDT.1m`, `prices.USDT`; the subject in any case
 * and, for markets, in the separated forms of docs/api.md (`book.btc-usdt`). Null when it
 * names no stream there is.
 */
export function parseStreamName(raw: unknown): StreamName | null {
  if (raw === HEARTBEAT_STREAM) return { name: HEARTBEAT_STREAM, kind: "heartbeat", subject: "" };
  if (raw === TICKERS_STREAM) return { name: TICKERS_STREAM, kind: "tickers", subject: "" };
  if (raw === STATUS_STREAM) return { name: STATUS_STREAM, kind: "status", subject: "" };
  if (typeof raw !== "string" || raw.length > 64) return null;
  const dot = raw.indexOf(".");
  if (dot <= 0) return null;
  const kind = raw.slice(0, dot);
  if (!isStreamKind(kind) || kind === "heartbeat" || kind === "status") return null;
  let subject = raw.slice(dot + 1);
  if (kind === "tickers") return isTickerWindow(subject) ? { name: raw, kind, subject: "" } : null;
  // kline.{SYMBOL}.{interval}[@+08:00] and ticker.{SYMBOL}.{window}: the suffix after the last dot (symbols have none).
  let suffix = "";
  const last = subject.lastIndexOf(".");
  if (kind === "kline") {
    if (last <= 0) return null;
    const [interval = "", zone] = subject.slice(last + 1).split("@", 3);
    if (!isKlineInterval(interval) || (zone !== undefined && zone !== STREAM_TIME_ZONE)) return null;
    // An offset that moves no boundary of the interval names the UTC stream: the candles are the same.
    suffix = zone !== undefined && offsetMoves(interval, STREAM_OFFSET_MS) ? `.${interval}@${zone}` : `.${interval}`;
    subject = subject.slice(0, last);
  } else if (kind === "ticker" && last > 0) {
    const window = subject.slice(last + 1);
    if (!isTickerWindow(window)) return null;
    suffix = `.${window}`;
    subject = subject.slice(0, last);
  }
  if (kind === "prices") {
    const quote = subject.toUpperCase();
    return quoteAssets().includes(quote) ? { name: `prices.${quote}`, kind, subject: quote } : null;
  }
  const parsed = parseSymbol(subject);
  const market = parsed && listedMarket(parsed);
  // A delisted market has no streams: a new subscription to one is UNKNOWN_STREAM.
  if (!market || market.status === "DELISTED") return null;
  return { name: `${kind}.${market.symbol}${suffix}`, kind, subject: market.symbol };
}

function isTickerWindow(text: string): text is TickerWindow {
  return (TICKER_WINDOWS as readonly string[]).includes(text);
}

/** The kline streams of a market: every interval in UTC, and those whose boundaries the streams' one offset moves. */
export function klineStreams(symbol: string): { stream: string; interval: (typeof KLINE_INTERVALS)[number]; offsetMs: number }[] {
  return [
    ...KLINE_INTERVALS.map((interval) => ({ stream: `kline.${symbol}.${interval}`, interval, offsetMs: 0 })),
    ...KLINE_INTERVALS.filter((interval) => offsetMoves(interval, STREAM_OFFSET_MS)).map((interval) => ({
      stream: `kline.${symbol}.${interval}@${STREAM_TIME_ZONE}`,
      interval,
      offsetMs: STREAM_OFFSET_MS,
    })),
  ];
}

/** The streams a market publishes; a shard registers with the market for any of them. */
export function marketStreams(symbol: string): string[] {
  return [
    `ticker.${symbol}`,
    ...TICKER_WINDOWS.map((window) => `ticker.${symbol}.${window}`),
    `avgPrice.${symbol}`,
    `bookTicker.${symbol}`,
    `trades.${symbol}`,
    `book.${symbol}`,
    ...klineStreams(symbol).map((k) => k.stream),
  ];
}

export type MessageId = number | string | null;

type ClientMessage =
  | { op: "subscribe"; id: MessageId; streams: unknown[]; from?: number }
  | { op: "unsubscribe"; id: MessageId; streams: unknown[] }
  | { op: "list" | "ping"; id: MessageId }
  | { op: "more"; id: MessageId; token?: string };

/** The codes of an error message on a connection (docs/streams.md); `INTERNAL_ERROR` is the shard's own failure. */
export const ERROR_CODES = [
  "UNKNOWN_STREAM",
  "TOO_MANY_STREAMS",
  "INVALID_MESSAGE",
  "UNKNOWN_OP",
  "INTERNAL_ERROR",
  "STREAM_ENDED",
  "CATCH_UP_LIMIT",
  "HISTORY_NOT_KEPT",
  "CATCH_UP_FAILED",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export type ParseResult = { ok: true; message: ClientMessage } | { ok: false; code: "INVALID_MESSAGE" | "UNKNOWN_OP"; message: string; id: MessageId };

/** A client's `id` is echoed when it is a number or a short string; anything else is null. */
function idOf(value: Record<string, unknown>): MessageId {
  const id = value.id;
  return (typeof id === "number" && Number.isFinite(id)) || (typeof id === "string" && id.length <= 64) ? id : null;
}

export function parseClientMessage(text: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: "INVALID_MESSAGE", message: "messages are JSON text", id: null };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ok: false, code: "INVALID_MESSAGE", message: "a message is a JSON object with op", id: null };
  const record = value as Record<string, unknown>;
  const id = idOf(record);
  switch (record.op) {
    case "subscribe":
    case "unsubscribe":
      if (!Array.isArray(record.streams)) return { ok: false, code: "INVALID_MESSAGE", message: `${record.op} needs streams: [...]`, id };
      if (record.op === "unsubscribe" || record.from === undefined) return { ok: true, message: { op: record.op, id, streams: record.streams } };
      if (!isMoment(record.from))
        return { ok: false, code: "INVALID_MESSAGE", message: "from is a moment in Unix milliseconds (docs/streams.md#from-any-moment)", id };
      return { ok: true, message: { op: "subscribe", id, streams: record.streams, from: record.from } };
    case "list":
    case "ping":
      return { ok: true, message: { op: record.op, id } };
    case "more":
      return { ok: true, message: { op: "more", id, ...(typeof record.token === "string" && { token: record.token.slice(0, 64) }) } };
    default:
      return { ok: false, code: "UNKNOWN_OP", message: "op is one of subscribe, unsubscribe, list, ping, more", id };
  }
}

function isMoment(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** `from=` of a connect: a moment in Unix ms, or undefined when absent; null when it does not read as one. */
export function parseFrom(text: string | null): number | undefined | null {
  if (text === null || text === "") return undefined;
  const value = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  return isMoment(value) ? value : null;
}

export type Plan = { ok: true; streams: StreamName[] } | { ok: false; code: "UNKNOWN_STREAM" | "TOO_MANY_STREAMS"; message: string };

function describe(name: unknown): string {
  return JSON.stringify(name)?.slice(0, 70) ?? String(name);
}

/** Parses every requested name, all or nothing (a request with one bad name changes nothing). */
function parseAll(requested: unknown[]): Plan {
  if (requested.length > MAX_STREAMS_PER_CONNECTION) {
    return { ok: false, code: "TOO_MANY_STREAMS", message: `at most ${MAX_STREAMS_PER_CONNECTION} streams per request and per connection` };
  }
  const streams: StreamName[] = [];
  for (const name of requested) {
    const stream = parseStreamName(name);
    if (!stream)
      return {
        ok: false,
        code: "UNKNOWN_STREAM",
        message: `${describe(name)} is not a stream: ticker.{SYMBOL}[.{1h|4h|1d}], avgPrice.{SYMBOL}, bookTicker.{SYMBOL}, trades.{SYMBOL}, book.{SYMBOL}, kline.{SYMBOL}.{1s…1M}[@+08:00], prices.{QUOTE}, tickers[.{1h|4h|1d}], status, heartbeat (docs/streams.md, GET /api/markets)`,
      };
    if (!streams.some((s) => s.name === stream.name)) streams.push(stream);
  }
  return { ok: true, streams };
}

/** The streams a subscribe adds to a connection that holds `current`; nothing if any is wrong. */
export function planSubscribe(current: readonly string[], requested: unknown[]): Plan {
  const parsed = parseAll(requested);
  if (!parsed.ok) return parsed;
  const added = parsed.streams.filter((s) => !current.includes(s.name));
  if (current.length + added.length > MAX_STREAMS_PER_CONNECTION) {
    return { ok: false, code: "TOO_MANY_STREAMS", message: `at most ${MAX_STREAMS_PER_CONNECTION} streams per connection (this one holds ${current.length})` };
  }
  return { ok: true, streams: added };
}

/** The streams an unsubscribe removes; names not held are ignored, unknown names refuse it all. */
export function planUnsubscribe(current: readonly string[], requested: unknown[]): Plan {
  const parsed = parseAll(requested);
  if (!parsed.ok) return parsed;
  return { ok: true, streams: parsed.streams.filter((s) => current.includes(s.name)) };
}

/**
 * The inbound rate: records a message at `now` in `times` (the arrival times of the last
 * second, oldest first) and says whether it is within `most` (10; a dialect's may be fewer) in any rolling second.
 */
export function admitMessage(times: number[], now: number, most = MAX_MESSAGES_PER_SECOND): boolean {
  while (times.length > 0 && times[0]! <= now - 1000) times.shift();
  times.push(now);
  return times.length <= most;
}

/** UTF-8 size of a frame, for a limit of `most` bytes (the native 4 KiB unless a dialect says more). */
export function frameBytes(message: string | ArrayBuffer, most = MAX_MESSAGE_BYTES): number {
  if (typeof message !== "string") return message.byteLength;
  // UTF-8 never takes fewer bytes than UTF-16 code units: a long string needs no encoding.
  return message.length > most ? message.length : new TextEncoder().encode(message).length;
}

/** A stream message's text as subscribers get it, `{"stream": …, "data": …}` (the live streams, a catch-up, a replay). */
export function streamFrame(stream: string, data: unknown): string {
  return JSON.stringify({ stream, data });
}

/** One message for subscribers of `stream`, as a market or the price index publishes it. */
export interface StreamEvent {
  stream: string;
  data: unknown;
}
