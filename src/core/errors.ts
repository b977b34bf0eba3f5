import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "../env";
import { problem, problemResponse, ProblemError } from "./problem";

/** The single error path: every thrown value leaves as problem+json (contract section 8). */
export const handleError: ErrorHandler<AppEnv> = (error, c) => {
  const requestId = c.get("requestId");
  if (error instanceof ProblemError) return problemResponse(error, requestId);
  if (error instanceof HTTPException) {
    // Hono's own refusals (malformed JSON in a validator, a body over its limit).
    const known =
      error.status === 413
        ? problem("PAYLOAD_TOO_LARGE", error.message || "the body is too large")
        : error.status === 400
          ? problem("VALIDATION_FAILED", error.message || "the request is malformed", { errors: [{ path: "body", message: error.message || "malformed" }] })
          : undefined;
    if (known) return problemResponse(known, requestId);
  }
  console.error(JSON.stringify({ level: "error", requestId, method: c.req.method, path: c.req.path, error: String(error), stack: error instanceof Error ? error.stack : undefined }));
  return problemResponse(problem("INTERNAL_ERROR", "an unexpected error occurred; quote the requestId when reporting it"), requestId);
};

type RouteEntry = { method: string; path: string };
let routeMatchers: { method: string; pattern: RegExp }[] | undefined;

function compileRoutes(routes: readonly RouteEntry[]) {
  return routes
    .filter((route) => route.method !== "ALL")
    .map((route) => ({
      method: route.method,
      pattern: new RegExp(`^${route.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+").replace(/\*/g, ".*")}$`),
    }));
}

/** 404 `NOT_FOUND`, or 405 `METHOD_NOT_ALLOWED` with `Allow` when the path exists for other methods. */
export function notFoundHandler(routes: () => readonly RouteEntry[]): NotFoundHandler<AppEnv> {
  return (c: Context<AppEnv>) => {
    routeMatchers ??= compileRoutes(routes());
    const path = c.req.path;
    const allowed = [...new Set(routeMatchers.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    const requestId = c.get("requestId");
    if (allowed.length > 0 && !allowed.includes(c.req.method)) {
      if (allowed.includes("GET")) allowed.push("HEAD");
      return problemResponse(problem("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on ${path}; use ${allowed.join(", ")}`, {}, { Allow: allowed.join(", ") }), requestId);
    }
    return problemResponse(problem("NOT_FOUND", `nothing at ${path}; GET /openapi.json lists every endpoint`), requestId);
  };
}
