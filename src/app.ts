import type { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { publicLimit, publicReadLimit } from "./access/middleware";
import { pacedPublicLimit } from "./access/paced-middleware";
import { dashboardRoutes } from "./accounts/pages";
import { accountRoutes } from "./accounts/routes";
import { adminRoutes } from "./admin/routes";
import { announcementRoutes } from "./announcements/routes";
import { auditRoutes } from "./audit/routes";
import { handleBinanceError } from "./binance/errors";
import { binanceRoutes } from "./binance/routes";
import { demoFeed } from "./core/object-ids";
import { SERVERS, withPublicSecurity, withSharedAnswers } from "./core/openapi";
import { problem } from "./core/problem";
import { requestId } from "./core/request-id";
import { noStore, securityHeaders } from "./core/security-headers";
import { asyncApiDocument } from "./docs/asyncapi";
import { docsRoutes } from "./docs/routes";
import { replayRoutes } from "./history/book-routes";
import { historyFileRoutes } from "./history/file-routes";
import { IMPORT_MAX_BYTES } from "./history/kline-import";
import { historyOperatorRoutes } from "./history/operator-routes";
import type { AppEnv } from "./http/env";
import { handleError, notFoundHandler } from "./http/errors";
import { createRouter } from "./http/router";
import { logRequests } from "./logs/request-log";
import { countRequests } from "./metrics/middleware";
import { metricsRoutes } from "./metrics/routes";
import { pageRoutes } from "./pages/routes";
import { publishKeyRoutes } from "./publish/key-routes";
import { publishRoutes } from "./publish/routes";
import { readContext } from "./reads/reads";
import { marketRoutes } from "./reads/routes";
import { ensureRegistry } from "./registry/copy";
import { registryRoutes } from "./registry/routes";
import { callbackRoutes } from "./settlements/routes";
import { streamOperatorRoutes } from "./streams/operator-routes";
import { publicStreamRoutes, signedStreamRoutes } from "./streams/routes";
import { tardisRoutes } from "./tardis/routes";
import { signedRoutes } from "./v1/routes";

let demoFeedStarted = false;

/**
 * How long a Tardis request over the public limit waits for its window: `tardis-dev` asks for 60
 * minutes at once and, refused, waits a minute before asking again (docs/tardis.md#limits).
 */
const TARDIS_WAIT_MS = 15_000;

/** In local development the first request of an isolate makes sure the demo feed runs. */
const startDemoFeed = createMiddleware<AppEnv>(async (c, next) => {
  if (!demoFeedStarted && c.env.DEMO_FEED === "on") {
    demoFeedStarted = true;
    c.executionCtx.waitUntil(demoFeed(c.env).ensureRunning());
  }
  await next();
});

/**
 * Every request sees this isolate's registry copy, current within REGISTRY_REFRESH_MS: the
 * market lookups after it are synchronous and never read D1 (docs/operations.md#listing-markets).
 */
const withRegistry = createMiddleware<AppEnv>(async (c, next) => {
  // A connectivity check and the clock answer without it: a registry that cannot be read fails them not.
  if (!REGISTRY_FREE.has(c.req.path)) await ensureRegistry(c.env, readContext(c).waitUntil);
  await next();
});
const REGISTRY_FREE = new Set(["/api/time", "/binance/api/v3/ping", "/binance/api/v3/time"]);

const limitBodies = (maxSize: number) =>
  bodyLimit({
    maxSize,
    onError: () => {
      throw problem("PAYLOAD_TOO_LARGE", `a body here is at most ${maxSize} bytes`);
    },
  });
/** Forms and account or operator JSON are small; anything larger is refused before it is read. */
const smallBodies = limitBodies(64 * 1024);
/** Bulk listings are larger: 500 markets are about 70 KiB. */
const LISTING_PATHS = new Set(["/admin/markets", "/admin/assets"]);
const listingBodies = limitBodies(256 * 1024);
/** A history import carries up to 50,000 minutes (docs/history.md#import). */
const IMPORT_PATH = /^\/admin\/markets\/[^/]+\/history\/klines$/;
const importBodies = limitBodies(IMPORT_MAX_BYTES);
const bodies = createMiddleware<AppEnv>((c, next) =>
  (IMPORT_PATH.test(c.req.path) ? importBodies : LISTING_PATHS.has(c.req.path) ? listingBodies : smallBodies)(c, next),
);

const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Market Data Service",
    version: "2.0.0",
    description: "Market data for trading assets and pairs at the edge. Decimals are strings, timestamps Unix milliseconds, errors RFC 9457 problem+json.",
  },
  servers: [
    { url: `http://${SERVERS.local.host}`, description: SERVERS.local.description },
    { url: `https://${SERVERS.production.host}`, description: SERVERS.production.description, variables: SERVERS.production.variables },
  ],
};

/**
 * Accounts, sessions, keys and gateway secrets: never cached anywhere, and small bodies only.
 * (Mounted before every router, so a request is refused before any of its routes reads a byte.)
 */
const privatePaths = [noStore, bodies];

export function createApp(): OpenAPIHono<AppEnv> {
  const app = createRouter();
  app.use(requestId);
  app.use(countRequests);
  app.use(logRequests);
  app.use(securityHeaders);
  app.use(withRegistry);
  app.use(startDemoFeed);

  // The route table: every router, where it is mounted, and the limit in front of it.
  //   publicLimit: 10 requests a second per client address (docs/limits.md), counted by its gate
  //   publicReadLimit: the same, the admission carried by the read's first market refresh (docs/limits.md#address-gates)
  //   per key:     30 a second per API key, inside the signature check (signedAccess)
  //   per gateway: 50 a second per gateway, once its signature is verified
  //   failures:    a failed authentication counts against the client address
  for (const [prefix, router, ...guards] of [
    ["/api", marketRoutes(publicReadLimit)], //               market data: publicReadLimit
    ["/api", publicStreamRoutes(publicLimit)], //             GET /api/ws: publicLimit, 5 connections per address
    ["/api", replayRoutes(publicLimit)], //                   GET /api/replay: publicLimit, one of the 5 connections
    ["/binance", binanceRoutes(publicReadLimit, () => app)], // Binance dialect, REST, streams and WebSocket API: publicReadLimit, 5 connections per address
    ["/api/gateway", callbackRoutes], //                      settlement callbacks: per gateway; failures
    ["/v1", signedRoutes], //                                 signed market data and ingest: per key; failures
    ["/v1", signedStreamRoutes], //                           GET /v1/ws: per key, 5 connections per key; failures
    ["/v1", publishRoutes], //                                GET /v1/publish: the key's publish limit on the upgrade; failures
    ["/account", accountRoutes(publicLimit), ...privatePaths], // account JSON API: publicLimit
    ["/dashboard", dashboardRoutes(publicLimit), ...privatePaths], // form posts: publicLimit; pages: none
    ["/admin", adminRoutes, ...privatePaths], //              operator API: bearer token; failures
    ["/admin", registryRoutes], //                            listing markets and assets: as above
    ["/admin", publishKeyRoutes], //                          publishing keys: as above
    ["/admin", auditRoutes], //                               the audit log: as above
    ["/admin", streamOperatorRoutes], //                      planned closes of stream connections: as above
    ["/admin", announcementRoutes], //                        announcements: as above
    ["/admin", metricsRoutes], //                             the operator metrics: as above
    ["/admin", historyOperatorRoutes], //                     importing a market's past, writing daily files: as above
    ["/", historyFileRoutes(publicLimit)], //                  daily files in Binance's public-data layout, from R2: publicLimit
    ["/tardis/v1", tardisRoutes(pacedPublicLimit(TARDIS_WAIT_MS))], // Tardis-compatible feed and datasets: publicLimit, waited for up to 15 s
    ["/docs", docsRoutes], //                                 the API reference page: none
    ["/", pageRoutes], //                                     pages and their scripts: none
  ] as const) {
    if (guards.length > 0) app.use(`${prefix}/*`, ...guards);
    app.route(prefix, router);
  }
  // Made once per isolate: the routes do not change while it lives.
  let document: ReturnType<typeof app.getOpenAPI31Document> | undefined;
  app.get("/openapi.json", (c) => c.json((document ??= withPublicSecurity(withSharedAnswers(app.getOpenAPI31Document(OPENAPI_INFO))))));
  let streams: ReturnType<typeof asyncApiDocument> | undefined;
  app.get("/asyncapi.json", (c) => c.json((streams ??= asyncApiDocument())));
  // The signed requests' three headers (docs/signing.md), each a scheme of its own.
  for (const [scheme, name, description] of [
    ["ApiKey", "X-API-KEY", "API key id (mk_…), from the dashboard's API Management"],
    ["Signature", "X-SIGNATURE", "hex HMAC-SHA256 of `X-TIMESTAMP\\nMETHOD\\nrequestTarget\\nbody` keyed by the API secret (docs/signing.md)"],
    ["Timestamp", "X-TIMESTAMP", "Unix ms; optional X-RECV-WINDOW (1–60000, default 5000)"],
  ] as const) {
    app.openAPIRegistry.registerComponent("securitySchemes", scheme, { type: "apiKey", in: "header", name, description });
  }
  app.openAPIRegistry.registerComponent("securitySchemes", "AdminToken", {
    type: "http",
    scheme: "bearer",
    description: "ADMIN_TOKEN (a Worker secret; locally in .dev.vars)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "Session", {
    type: "apiKey",
    in: "cookie",
    name: "mds_session",
    description: "Set by POST /account/login",
  });
  // Under /binance every error is Binance's, also one thrown before its router (the registry, the limits).
  app.onError((error, c) => (c.req.path.startsWith("/binance/") ? handleBinanceError(error, c) : handleError(error, c)));
  app.notFound(notFoundHandler(() => app.routes));
  return app;
}
