import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    // The Worker's bindings (worker-configuration.d.ts), plus the migrations the test setup applies.
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      /** scripts/default-venue.sql: the seven default markets. */
      TEST_DEFAULT_VENUE: string;
      /** vitest.config.ts: an address's WebSocket API answer bytes a minute here. */
      WS_API_ANSWER_BYTES: string;
    }
  }
}
