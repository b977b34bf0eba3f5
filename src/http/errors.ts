import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { ProblemError, problem, problemResponse } from "../core/problem";
import type { AppEnv } from "./env";

/** The single error path: every thrown value leaves as problem+json (docs/api.md#errors). */
export const handleError: ErrorHandler<AppEnv> = (error, c) => {
  const requestId = c.get("requestId");
  if (error instanceof ProblemError) return problemResponse(error, requestId);
  if (error instanceof HTTPException && error.status >= 400 && error.status < 500) {
    // Hono's own refusals (malformed JSON or form data, a body over its limit, a media type a
    // route does not declare) are the client's mistakes: 4xx problems like every other.
    return problemResponse(fromHttpException(error), requestId);
  }
  // Logged once, with the route and who asked, by `logRequests` (src/logs/request-log.ts).
  return problemResponse(problem("INTERNAL_ERROR", "an unexpected error occurred; quote the requestId when reporting it"), requestId);
};

/** The problem a framework refusal stands for; a 4xx status this service does not name is a 400. */
function fromHttpException(error: HTTPException): ProblemError {
  const message = error.message || "the request is malformed";
  switch (error.status) {
    case 413:
      return problem("PAYLOAD_TOO_LARGE", message);
    case 415:
      return problem("UNSUPPORTED_MEDIA_TYPE", `${message}: send the body as this endpoint's documented Content-Type (GET /openapi.json)`);
    case 401:
      return problem("UNAUTHENTICATED", message);
    case 404:
      return problem("NOT_FOUND", message);
    default:
      return problem("VALIDATION_FAILED", message, { errors: [{ path: "body", message }] });
  }
}

type RouteEntry = { method: string; path: string };
let routeMatchers: { method: string; pattern: RegExp }[] | undefined;

function compileRoutes(routes: readonly RouteEntry[]) {
  return routes
    .filter((route) => route.method !== "ALL")
    .map((route) => ({
      method: route.method,
      pattern: new RegExp(
        `^${route.path
          .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
          .replace(/\/:[^/]+/g, "/[^/]+")
          .replace(/\*/g, ".*")}$`,
      ),
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
      return problemResponse(
        problem("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on ${path}; use ${allowed.join(", ")}`, {}, { Allow: allowed.join(", ") }),
        requestId,
      );
    }
    return problemResponse(problem("NOT_FOUND", `nothing at ${path}; GET /openapi.json lists every endpoint`), requestId);
  };
}
