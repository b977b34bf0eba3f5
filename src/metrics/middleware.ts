import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { ProblemError } from "../core/problem";
import type { AppEnv } from "../env";
import { keyIdOf, principalKind } from "../logs/request-log";
import { isolateMetrics, metricsOn } from "./holder";
import { callbackOutcome, limitScope } from "./outcomes";

/**
 * Counts every answer in the isolate (docs/operations.md#metrics): by route pattern (never the
 * raw URL) and status, the 429s by scope, ingest batches and settlement callbacks by result; and
 * writes one data point per request to Workers Analytics Engine where it is bound. Hands the
 * isolate's counts on within METRICS_FLUSH_MS, after the answer (`waitUntil`).
 *
 * @example
 * app.use(countRequests);
 */
export const countRequests = createMiddleware<AppEnv>(async (c, next) => {
  const startedAt = Date.now();
  await next();
  if (!metricsOn(c.env)) return;
  const route = routePath(c, -1) || "unmatched";
  const status = c.res.status;
  const counts = isolateMetrics.counts;
  counts.add("mds_http_requests_total", { route, status: String(status) });
  const code = c.error instanceof ProblemError ? c.error.code : undefined;
  if (status === 429) counts.add("mds_rate_limited_total", { scope: limitScope(c.req.path, code) });
  if (route === "/api/gateway/callback") counts.add("mds_settlement_callbacks_total", { result: callbackOutcome(status) });
  if (route === "/v1/ingest") counts.add("mds_publish_batches_total", { result: status === 200 ? (c.get("batchOutcome") ?? "applied") : "refused" });
  // Dropped locally; in production the SQL of docs/operations.md#analytics-engine reads them.
  c.env.REQUEST_EVENTS?.writeDataPoint({
    indexes: [route.slice(0, 96)],
    blobs: [route, c.req.method, code ?? "", principalKind(c.req.path), keyIdOf(c.req.header("X-API-KEY") ?? c.req.query("apiKey")) ?? ""],
    doubles: [status, Date.now() - startedAt],
  });
  const waitUntil = (promise: Promise<unknown>) => {
    try {
      c.executionCtx.waitUntil(promise);
    } catch {
      // No execution context (the app called directly, as a test does): the promise runs on its own.
    }
  };
  const dueAt = isolateMetrics.settle(c.env, waitUntil);
  // An isolate is billed for CPU, not for waiting: a timer hands the counts on when they are due.
  if (dueAt !== undefined) waitUntil(new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt - Date.now()))).then(() => isolateMetrics.due(c.env)));
});
