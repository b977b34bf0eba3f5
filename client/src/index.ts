/**
 * The official TypeScript client of the Market Data Service (docs/client.md): typed REST calls,
 * signing, pacing, and streams with a local order book kept in sync. Web platform only (fetch,
 * Web Crypto, WebSocket): Node ≥ 20, browsers, Workers, Deno and Bun.
 */
export { bookChecksum, CHECKSUM_DEPTH, checksumText, crc32, type Level } from "./checksum.js";
export { ServerClock } from "./clock.js";
export { compareDecimal, isZeroDecimal } from "./decimal.js";
export { MarketDataError, type ProblemBody } from "./errors.js";
export type { components, operations, paths } from "./generated/openapi.js";
export { type ApplyResult, type BookMessage, LocalBook } from "./local-book.js";
export {
  type BackoffOptions,
  backoffDelay,
  type Clock,
  RateLimitPacer,
  type RateLimitState,
  RECONNECT_BACKOFF,
  reconnectDelay,
  retryAfterMs,
  systemClock,
} from "./pacing.js";
export { type ReplayEnded, type ReplayOptions, replay } from "./replay.js";
export { type Answer, type Body, type ClientOptions, MarketDataClient, OPERATIONS, type OperationId, type Params, requestTarget } from "./rest.js";
export { type SigningInput, sign, signaturePayload } from "./signing.js";
export { MarketStream } from "./stream.js";
// The streams' shapes, options, refusals and canonical names.
export * from "./stream-types.js";
