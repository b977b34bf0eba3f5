import { OpenAPIHono } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { handleError, notFoundHandler } from "./core/errors";
import { requestId } from "./core/request-id";
import { createRouter } from "./core/router";
import { docsRoutes } from "./docs/routes";
import type { AppEnv } from "./env";
import { marketRoutes } from "./market/routes";

let demoFeedStarted = false;

/** In local development the first request of an isolate makes sure the demo feed runs. */
const startDemoFeed = createMiddleware<AppEnv>(async (c, next) => {
  if (!demoFeedStarted && c.env.DEMO_FEED === "on") {
    demoFeedStarted = true;
    c.executionCtx.waitUntil(c.env.DEMO_FEED_OBJECT.getByName("demo").ensureRunning());
  }
  await next();
});

export function createApp(): OpenAPIHono<AppEnv> {
  const app = createRouter();
  app.use(requestId);
  app.use(startDemoFeed);
  app.route("/", marketRoutes);
  app.route("/", docsRoutes);
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Market Data Service",
      version: "1.0.0",
      description: "Market data for trading assets and pairs at the edge. Decimals are strings, timestamps Unix milliseconds, errors RFC 9457 problem+json.",
    },
  });
  app.onError(handleError);
  app.notFound(notFoundHandler(() => app.routes));
  return app;
}
