import { createMiddleware } from "hono/factory";
import { sleep } from "../core/cross-request-wait";
import { ProblemError } from "../core/problem";
import { setResponseHeaders } from "../core/response-headers";
import type { AppEnv } from "../http/env";
import { clientPrincipal } from "./client-address";
import { admit, localRefusal, PUBLIC_DETAIL, PUBLIC_LIMIT } from "./rate-limit";
import { rateLimitHeaders } from "./sliding-window";

/** How long a refused request would wait for its window, or undefined when it is not a refusal. */
function retryAfter(error: unknown): number | undefined {
  return error instanceof ProblemError && error.code === "RATE_LIMITED" ? Math.max(1, Number(error.extras?.retryAfterMs ?? 1_000)) : undefined;
}

/**
 * The public limit, 10 requests a second per client address (docs/limits.md), for bulk readers
 * that ask many at once (`tardis-dev` fetches 60 minutes concurrently, and waits a minute after a
 * 429): a request over the limit waits for its window, up to `maxWaitMs`, before it is refused.
 * The count stays exact — a request is admitted only by its window — and a waiting request costs
 * its isolate a timer, no call: the isolate answers refusals itself until the window's reset.
 * The route runs only once admitted.
 *
 * @example
 * router.get("/data-feeds/:exchange", pacedPublicLimit(15_000), handler);
 */
export function pacedPublicLimit(maxWaitMs: number) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = clientPrincipal(c.req.raw);
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      let headers: Record<string, string>;
      try {
        const refused = localRefusal(principal, PUBLIC_DETAIL);
        if (refused) throw refused;
        headers = rateLimitHeaders(await admit(c.env, principal, PUBLIC_LIMIT, PUBLIC_DETAIL));
      } catch (error) {
        const wait = retryAfter(error);
        if (wait === undefined || Date.now() + wait > deadline) throw error;
        await sleep(wait);
        continue;
      }
      await next();
      return setResponseHeaders(c, headers);
    }
  });
}
