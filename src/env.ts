import type { AccessGuard } from "./access/access-guard";
import type { DemoFeed } from "./market/demo-feed-object";
import type { MarketObject } from "./market/market-object";
import type { PriceIndex } from "./market/price-index-object";
import type { StreamHub } from "./streams/stream-hub";

/** The Worker's bindings, as declared in wrangler.toml (and `.dev.vars` for secrets). */
export interface Env {
  PRICES: KVNamespace;
  DB: D1Database;
  MARKET: DurableObjectNamespace<MarketObject>;
  PRICE_INDEX: DurableObjectNamespace<PriceIndex>;
  DEMO_FEED_OBJECT: DurableObjectNamespace<DemoFeed>;
  ACCESS_GUARD: DurableObjectNamespace<AccessGuard>;
  STREAM_HUB: DurableObjectNamespace<StreamHub>;
  /** How many StreamHub shards share the WebSocket connections. */
  STREAM_SHARDS?: string;
  /** "on" runs the demo feed (local development); anything else leaves it off. */
  DEMO_FEED?: string;
  /** Seed of the demo feed's random walk, so runs can be reproduced. */
  DEMO_SEED?: string;
  /** Worker secret: base64 of 32 bytes; seals API key and gateway secrets at rest. */
  SEALING_KEY?: string;
  /** Worker secret: bearer token of the operator API. */
  ADMIN_TOKEN?: string;
  /** How long (ms) a missing settlement sequence may hold later events back; default 600000 (10 minutes). */
  SETTLEMENT_GAP_HOLD_MS?: string;
}

export interface AppVariables {
  requestId: string;
  /** The RateLimit-* headers of the admission in force, for answers made outside Hono (a 101). */
  rateLimitHeaders?: Record<string, string>;
}

export type AppEnv = { Bindings: Env; Variables: AppVariables };
