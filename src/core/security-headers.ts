import { createMiddleware } from "hono/factory";
import { secureHeaders } from "hono/secure-headers";
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
 * - HSTS, `nosniff` and the rest of Hono's defaults.
 *
 * @example
 * app.use(securityHeaders);
 */
export const securityHeaders = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
    objectSrc: ["'none'"],
    baseUri: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "same-origin",
  crossOriginResourcePolicy: "cross-origin",
  crossOriginOpenerPolicy: "same-origin",
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
