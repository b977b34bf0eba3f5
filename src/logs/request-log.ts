import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { KEY_ID_PATTERN } from "../access/keys";
import { type ProblemCode, ProblemError } from "../core/problem";
import type { AppEnv } from "../http/env";
import { logEvent } from "./log";

/** The problem codes of a refused authentication (a key, a signature, a session, a token, a gateway). */
const AUTH_CODES = new Set<ProblemCode>([
  "MISSING_CREDENTIALS",
  "MALFORMED_CREDENTIALS",
  "INVALID_API_KEY",
  "INVALID_SIGNATURE",
  "TIMESTAMP_OUT_OF_WINDOW",
  "PERMISSION_DENIED",
  "IP_NOT_ALLOWED",
  "FORBIDDEN_MARKET",
  "UNAUTHENTICATED",
  "UNKNOWN_GATEWAY",
]);

/** Who a request speaks for, as a kind (never the address itself). */
export function principalKind(path: string): string {
  if (path.startsWith("/v1/")) return "key";
  if (path.startsWith("/api/gateway/")) return "gateway";
  if (path.startsWith("/admin/")) return "operator";
  if (path.startsWith("/account/") || path.startsWith("/dashboard")) return "account";
  return "address";
}

/** The key id a signed request names, if it is one (an id is public; the secret never travels). */
export function keyIdOf(value: string | undefined): string | undefined {
  return value && KEY_ID_PATTERN.test(value) ? value : undefined;
}

/**
 * One structured line per refused authentication, per 5xx and per operator change
 * (docs/operations.md#logs), with the request id, the route pattern, who and which key — never a
 * secret, a signature, a password or a cookie. Other answers write nothing.
 *
 * @example
 * app.use(logRequests);
 */
export const logRequests = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const status = c.res.status;
  const code = c.error instanceof ProblemError ? c.error.code : undefined;
  const refused = code !== undefined && AUTH_CODES.has(code);
  const failed = status >= 500;
  const change = c.req.path.startsWith("/admin/") && c.req.method !== "GET" && status < 400;
  if (!refused && !failed && !change) return;
  logEvent(
    {
      event: failed ? "request.failed" : refused ? "auth.refused" : "operator.change",
      requestId: c.get("requestId"),
      route: routePath(c, -1) || "unmatched",
      method: c.req.method,
      status,
      code,
      principal: principalKind(c.req.path),
      keyId: keyIdOf(c.req.header("X-API-KEY") ?? c.req.query("apiKey")),
      operator: c.get("operator"),
      gatewayId: c.req.path.startsWith("/api/gateway/") ? c.req.header("X-GATEWAY-ID")?.slice(0, 64) : undefined,
      error: failed && c.error ? String(c.error) : undefined,
      stack: failed && c.error instanceof Error && !(c.error instanceof ProblemError) ? c.error.stack : undefined,
    },
    failed ? "error" : "info",
  );
});
