/**
 * The streams' shapes apart from the connection that carries them: what the data are, what a
 * WebSocket must offer, the options, the refusals and the canonical names (./stream.ts).
 */
import type { components } from "./generated/openapi.js";
import type { BackoffOptions } from "./pacing.js";
import type { ClientOptions, MarketDataClient } from "./rest.js";

export type Ticker = components["schemas"]["Ticker"];
export type Trade = components["schemas"]["Trade"];
export type BookTicker = components["schemas"]["BookTicker"];
export type Prices = components["schemas"]["Prices"];
export type Kline = components["schemas"]["Kline"] & { interval: string; closed: boolean };
export interface Heartbeat {
  time: number;
  sequence: number;
}

/** What the client needs of a WebSocket: the standard browser API (Node ≥ 22, Deno, Bun and Workers have it; on Node 20 pass `WebSocket` from the `ws` package). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  // biome-ignore lint/suspicious/noExplicitAny: each runtime types its events differently; only `data` of a message is read
  addEventListener(type: "open" | "message" | "close" | "error", listener: (event: any) => void): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export type StreamState = "connecting" | "open" | "reconnecting" | "closed";

/** A stream the service refused (`UNKNOWN_STREAM`, `TOO_MANY_STREAMS`, …). */
export class StreamError extends Error {
  override readonly name = "StreamError";
  constructor(
    readonly code: string,
    readonly stream: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

export interface StreamOptions extends Partial<ClientOptions> {
  /** A REST client to share (its base URL, credentials and server clock); made from these options otherwise. */
  client?: MarketDataClient;
  /** Connect to `/v1/ws` with the API key (default: when `apiKey` and `secret` are given) or to the public `/api/ws`. */
  signed?: boolean;
  WebSocket?: WebSocketConstructor;
  /** Back-off between reconnects: each wait uniform in [0, ceiling], the ceiling 1 s doubling to 5 s (`reconnectDelay`). */
  reconnect?: Partial<BackoffOptions>;
  /** Reconnect when nothing arrived for this long (default 15 s: three missed heartbeats); 0 turns the heartbeat off. */
  heartbeatTimeoutMs?: number;
  /** The runtime-answered keepalive (`ping` → `pong`) interval (default 30 s). */
  keepaliveMs?: number;
}

/** A subscription's start: `from` (Unix ms, at most 24 h back) catches a book or trades stream up from then, into live. */
export interface SubscribeOptions {
  from?: number;
  onLive?: () => void;
}

/**
 * Canonical stream names, as the service acknowledges them: `book.btc-usdt` → `book.BTCUSDT`,
 * `prices.usdt` → `prices.USDT`, `kline.btc_usdt.1m` → `kline.BTCUSDT.1m`.
 */
export function canonicalStream(name: string): string {
  const [kind, symbol, ...rest] = name.split(".");
  if (symbol === undefined) return name;
  return [kind, symbol.toUpperCase().replace(/[-_/]/g, ""), ...rest].join(".");
}
