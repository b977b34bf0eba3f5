import { createMiddleware } from "hono/factory";
import { chargeClientIp } from "../access/middleware";
import { problem } from "../core/problem";
import type { AppEnv } from "../env";

async function digest(text: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
}

/**
 * The operator API's bearer token (`ADMIN_TOKEN`, a Worker secret). Never a default: without
 * the secret every operator route answers 503 `NOT_CONFIGURED`. Compared as digests in
 * constant time.
 */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const token = c.env.ADMIN_TOKEN;
  if (!token) throw problem("NOT_CONFIGURED", "ADMIN_TOKEN is not set: set it with `wrangler secret put ADMIN_TOKEN`");
  const presented = /^Bearer +(\S+) *$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  if (!presented || !crypto.subtle.timingSafeEqual(await digest(presented), await digest(token))) {
    // A failed authentication counts against the client IP (docs/limits.md): guessing is throttled.
    throw await chargeClientIp(c.env, c.req.raw, problem("UNAUTHENTICATED", "send Authorization: Bearer <ADMIN_TOKEN>"));
  }
  await next();
});
