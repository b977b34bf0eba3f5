import type { OpenAPIHono } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { publicLimit } from "./access/middleware";
import { dashboardRoutes } from "./accounts/pages";
import { accountRoutes } from "./accounts/routes";
import { adminRoutes } from "./admin/routes";
import { handleError, notFoundHandler } from "./core/errors";
import { demoFeed } from "./core/object-ids";
import { withSharedAnswers } from "./core/openapi";
import { problem } from "./core/problem";
import { requestId } from "./core/request-id";
import { createRouter } from "./core/router";
import { noStore, securityHeaders } from "./core/security-headers";
import { docsRoutes } from "./docs/routes";
import type { AppEnv } from "./env";
import { marketRoutes } from "./market/routes";
import { pageRoutes } from "./pages/routes";
import { callbackRoutes } from "./settlements/routes";
import { streamRoutes } from "./streams/routes";
import { signedRoutes } from "./v1/routes";

let demoFeedStarted = false;

/** In local development the first request of an isolate makes sure the demo feed runs. */
const startDemoFeed = createMiddleware<AppEnv>(async (c, next) => {
  if (!demoFeedStarted && c.env.DEMO_FEED === "on") {
    demoFeedStarted = true;
    c.executionCtx.waitUntil(demoFeed(c.env).ensureRunning());
  }
  await next();
});

/** Forms and account or operator JSON are small; anything larger is refused before it is read. */
const SMALL_BODY_BYTES = 64 * 1024;
const smallBodies = bodyLimit({
  maxSize: SMALL_BODY_BYTES,
  onError: () => {
    throw problem("PAYLOAD_TOO_LARGE", `a body here is at most ${SMALL_BODY_BYTES} bytes`);
  },
});

const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Market Data Service",
    version: "1.0.0",
    description: "Market data for trading assets and pairs at the edge. Decimals are strings, timestamps Unix milliseconds, errors RFC 9457 problem+json.",
  },
};

export function createApp(): OpenAPIHono<AppEnv> {
  const app = createRouter();
  app.use(requestId);
  app.use(securityHeaders);
  app.use(startDemoFeed);
  // Accounts, keys, sessions and gateway secrets: never cached anywhere; small bodies only.
  for (const path of ["/account/*", "/dashboard", "/dashboard/*", "/admin/*"]) {
    app.use(path, noStore);
    app.use(path, smallBodies);
  }
  // Public surface: 10 requests a second per client IP. Gateways have their own limit.
  app.use("/api/*", async (c, next) => (c.req.path === "/api/gateway/callback" ? next() : publicLimit(c, next)));
  app.use("/account/*", publicLimit);
  app.route("/", marketRoutes);
  app.route("/", signedRoutes);
  app.route("/", accountRoutes);
  app.route("/", dashboardRoutes);
  app.route("/", callbackRoutes);
  app.route("/", streamRoutes);
  app.route("/", adminRoutes);
  app.route("/", docsRoutes);
  app.route("/", pageRoutes);
  // Made once per isolate: the routes do not change while it lives.
  let document: ReturnType<typeof app.getOpenAPI31Document> | undefined;
  app.get("/openapi.json", (c) => c.json((document ??= withSharedAnswers(app.getOpenAPI31Document(OPENAPI_INFO)))));
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-API-KEY",
    description: "API key id (mk_…), from the dashboard's API Management",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "Signature", {
    type: "apiKey",
    in: "header",
    name: "X-SIGNATURE",
    description: "hex HMAC-SHA256 of `X-TIMESTAMP\\nMETHOD\\nrequestTarget\\nbody` keyed by the API secret (docs/signing.md)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "Timestamp", {
    type: "apiKey",
    in: "header",
    name: "X-TIMESTAMP",
    description: "Unix ms; optional X-RECV-WINDOW (1–60000, default 5000)",
  });
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
  app.onError(handleError);
  app.notFound(notFoundHandler(() => app.routes));
  return app;
}
