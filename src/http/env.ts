import type { ReadCarrier } from "../domain/market-answer";
import type { MarketGrant } from "../domain/market-config";

/**
 * The Worker's bindings are the global `Env`, generated from wrangler.toml by `npm run types`
 * into worker-configuration.d.ts, so they cannot drift from the configuration. What is here is
 * the app's own context on top of them.
 */
interface AppVariables {
  requestId: string;
  /** The RateLimit-* headers of the admission in force, for answers made outside Hono (a 101). */
  rateLimitHeaders?: Record<string, string>;
  /** Set by `requireAdmin`: the operator credential's id (a digest prefix of the token), for the audit log. */
  operator?: string;
  /** Set by `signedAccess("publish")`: the markets the publishing key may write. */
  publishGrant?: MarketGrant;
  /** Set by `POST /v1/ingest`: whether the batch changed anything, for the metrics. */
  batchOutcome?: "applied" | "duplicate";
  /** Set by `publicReadLimit` on a plain read: its admission, which the read's first market refresh may carry. */
  readCarrier?: ReadCarrier;
}

export type AppEnv = { Bindings: Env; Variables: AppVariables };
