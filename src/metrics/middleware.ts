import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { sleep } from "../core/cross-request-wait";
import { ProblemError } from "../core/problem";
import { intSetting, msSetting } from "../core/settings";
import type { AppEnv } from "../http/env";
import { keyIdOf, principalKind } from "../logs/request-log";
import { billed } from "./billed-bindings";
import { isolateMetrics, metricsOn } from "./holder";
import { callbackOutcome, limitScope } from "./outcomes";
import { POINT_WINDOW_MS, RequestEvents, SUCCESS_SAMPLE_EVERY } from "./request-events";

/** This isolate's Analytics Engine points, aggregated per kind of request every 25 s or so. */
export const requestEvents = new RequestEvents();

/**
 * Counts every answer in the isolate (docs/operations.md#metrics): by route pattern (never the
 * raw URL) and status, the 429s by scope, ingest batches and settlement callbacks by result; and
 * writes to Workers Analytics Engine, where it is bound, one data point per kind of request
 * every 25 s or so (`request-events.ts`). Hands the isolate's counts on within METRICS_FLUSH_MS, after the
 * answer (`waitUntil`).
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
  const waitUntil = (promise: Promise<unknown>) => {
    try {
      c.executionCtx.waitUntil(promise);
    } catch {
      // No execution context (the app called directly, as a test does): the promise runs on its own.
    }
  };
  // A point per kind of request every 25 s or so, not per request (a fast success's one window in
  // ANALYTICS_SUCCESS_SAMPLE, standing for that many); dropped locally, in production
  // the SQL of docs/operations.md#analytics-engine reads them. A window's timer, once it has
  // written, hands on the count of points it wrote unless the counts' own timer will.
  const now = Date.now();
  const events = billed(c.env, "REQUEST_EVENTS");
  requestEvents.add(
    events,
    now,
    {
      route,
      method: c.req.method,
      status,
      code: code ?? "",
      who: principalKind(c.req.path),
      keyId: keyIdOf(c.req.header("X-API-KEY") ?? c.req.query("apiKey")) ?? "",
      ms: now - startedAt,
    },
    {
      waitUntil,
      written: () => isolateMetrics.handOnUnlessWaiting(c.env),
      windowMs: msSetting(c.env.ANALYTICS_WINDOW_MS, POINT_WINDOW_MS),
      sampleEvery: intSetting(c.env.ANALYTICS_SUCCESS_SAMPLE, 1, 1_000, SUCCESS_SAMPLE_EVERY),
    },
  );
  const dueAt = isolateMetrics.settle(c.env, waitUntil);
  // An isolate is billed for CPU, not for waiting: a timer hands the counts on when they are due.
  if (dueAt !== undefined) waitUntil(sleep(Math.max(0, dueAt - Date.now())).then(() => isolateMetrics.due(c.env)));
});
