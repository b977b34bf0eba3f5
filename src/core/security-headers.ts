import { createMiddleware } from "hono/factory";
import { setResponseHeaders } from "./response-headers";

/**
 * The browser-facing protections every response carries, in one place.
 *
 * - CSP: scripts only from this service (the pages' bundles under `/assets`), no inline script,
 *   no plugins, no framing by anyone (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for
 *   older browsers): a framed dashboard could be clickjacked into creating or revoking a key.
 *   Inline styles stay allowed: the pages style a few elements inline, and a style cannot run code.
 * - `Cross-Origin-Resource-Policy: cross-origin`: market data is meant to be read by other sites
 *   (a dashboard on another origin fetching `/api/ticker`), so it is not fenced to this origin.
 * - `Referrer-Policy: same-origin`: nothing leaks to other sites, and a form post keeps its real
 *   `Origin` (under `no-referrer` browsers send `Origin: null`, which the CSRF check refuses).
 * - HSTS, `nosniff` and the rest of the usual set (the defaults of Hono's `secureHeaders`).
 *
 * A fixed list written out once, not Hono's `secureHeaders`: that one fetches the response's
 * headers again for every header it sets and deletes `X-Powered-By` (never set here) on every
 * response: with this list a refused request costs workerd 415 µs of CPU instead of 507
(docs/benchmarks.md).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "Cross-Origin-Resource-Policy": "cross-origin",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Origin-Agent-Cluster": "?1",
  "Referrer-Policy": "same-origin",
  "Strict-Transport-Security": "max-age=15552000; includeSubDomains",
  "X-Content-Type-Options": "nosniff",
  "X-DNS-Prefetch-Control": "off",
  "X-Download-Options": "noopen",
  "X-Frame-Options": "DENY",
  "X-Permitted-Cross-Domain-Policies": "none",
  "X-XSS-Protection": "0",
});

/**
 * Puts {@link SECURITY_HEADERS} on every response, errors included.
 *
 * @example
 * app.use(securityHeaders);
 */
export const securityHeaders = createMiddleware(async (c, next) => {
  await next();
  setResponseHeaders(c, SECURITY_HEADERS);
});

/**
 * `Cache-Control: no-store` for answers that carry a secret or a session's data (the account
 * API, the dashboard, the operator API): no browser, proxy or CDN may keep a copy of them.
 *
 * @example
 * app.use("/account/*", noStore);
 */
export const noStore = createMiddleware(async (c, next) => {
  await next();
  setResponseHeaders(c, { "Cache-Control": "no-store" });
});
