import type { Hook, RouteConfig } from "@hono/zod-openapi";
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { type FieldError, problem } from "../core/problem";
import type { AppEnv } from "./env";

/** Turns zod issues into the documented `errors: [{path, message}]`. */
export function fieldErrors(issues: readonly { path: readonly PropertyKey[]; message: string }[], prefix?: string): FieldError[] {
  return issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((part) => part !== undefined && part !== "").join("."),
    message: issue.message,
  }));
}

/** Every route's validation failure becomes 400 `VALIDATION_FAILED` with `errors`. */
const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) {
    const target = "target" in result ? String(result.target) : undefined;
    throw problem("VALIDATION_FAILED", "the request does not match the endpoint's schema", {
      errors: fieldErrors(result.error.issues, target === "json" ? "body" : target),
    });
  }
};

/** A router of the app: its context, and the validation hook that answers 400 with the fields. */
export type AppRouter = OpenAPIHono<AppEnv>;

/** A router for one capability; its routes and schemas join the OpenAPI document when mounted. */
export function createRouter(): AppRouter {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

/** What a capability's routes share: their tags, and the middleware and security they all stand behind. */
type SharedRouteConfig = Pick<RouteConfig, "tags" | "middleware" | "security">;

/**
 * Declares a capability's routes by method and path, each with what they all share, so a route
 * states only what is its own (a route may still set its own `middleware`, which replaces the
 * shared one). The declarations stay `createRoute`'s: typed handlers, one OpenAPI operation each.
 *
 * @example
 * const route = routesOf({ tags: ["Operator"], security, middleware: [requireAdmin] });
 * router.openapi(route("delete", "/gateways/{id}", { operationId: "revokeGateway", summary, request, responses }), handler);
 */
export function routesOf<S extends SharedRouteConfig>(shared: S) {
  return <M extends RouteConfig["method"], P extends string, R extends Omit<RouteConfig, "method" | "path">>(method: M, path: P, config: R) =>
    createRoute({ ...shared, ...config, method, path });
}
