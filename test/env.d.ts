import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    // The Worker's bindings (worker-configuration.d.ts), plus the migrations the test setup applies.
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
    }
  }
}
