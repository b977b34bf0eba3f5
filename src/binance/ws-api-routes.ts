import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/env";
import { WS_API_METHODS } from "./ws-api";
import { wsApiUpgrade } from "./ws-api-connection";

/** What answers a request of the WebSocket API: the app (its REST dialect), with the request's bindings. */
export type App = { fetch(request: Request, env: Env, executionCtx: ExecutionContext<unknown>): Response | Promise<Response> };

/**
 * `GET /ws-api/v3` on the Binance router mounted at `/binance` (docs/binance.md#websocket-api);
 * `limit` stands in front of the upgrade, and each request is counted by the REST route answering it.
 *
 * @example
 * binanceWsApiRoutes(router, publicLimit, () => app);
 */
export function binanceWsApiRoutes(router: OpenAPIHono<AppEnv>, limit: MiddlewareHandler<AppEnv>, app: () => App): void {
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/ws-api/v3",
    operationId: "binanceWebSocketApi",
    tags: ["Binance-compatible streams"],
    summary: "Binance's WebSocket API: request/response market data over one connection",
    description: `Upgrade: websocket. Text frames {"id","method","params"} answered {"id","status","result","rateLimits"} or {"id","status","error":{"code","msg"}}. Methods: ${Object.keys(WS_API_METHODS).join(", ")} (the REST dialect's answers); any other method is -1020. Each request counts against the client address's 10 a second; the connection is one of its 5 with the streams. ?returnRateLimits=false leaves rateLimits out unless a request asks for them (docs/binance.md#websocket-api).`,
    request: { query: z.object({ returnRateLimits: z.enum(["true", "false"]).optional().openapi({ description: "Default true" }) }) },
    responses: {
      101: { description: "Switching Protocols" },
      400: { description: "Not a WebSocket upgrade (-1130)" },
      429: { description: "-1003: over the request limit, or a sixth connection" },
    },
  });
  router.get("/ws-api/v3", limit, (c) =>
    wsApiUpgrade(c, (request) => Promise.resolve(app().fetch(request, c.env, c.executionCtx as ExecutionContext<unknown>))),
  );
}
