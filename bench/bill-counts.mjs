// What one window of a bench run billed, read from the service's operator metrics
// (docs/operations.md#metrics): the whole bill's counting (bench/whole-bill.mjs).
import { fitNonNegative } from "./fit.mjs";
import { scrape } from "./metrics.mjs";
import { workerLogs } from "./service.mjs";

/** The series that grew between two scrapes. */
export function grew(before, after) {
  const grown = new Map();
  for (const [series, value] of after) {
    const delta = value - (before.get(series) ?? 0);
    if (delta !== 0) grown.set(series, delta);
  }
  return grown;
}

/** The sum of a family's series whose labels include `labels`. */
export function total(grown, family, labels = {}) {
  let sum = 0;
  for (const [series, value] of grown) {
    if (series !== family && !series.startsWith(`${family}{`)) continue;
    if (Object.entries(labels).every(([name, v]) => series.includes(`${name}="${v}"`))) sum += value;
  }
  return sum;
}

/** Runs `work` between two scrapes; returns what grew, the workerd process's CPU seconds and the wall seconds. */
export async function counted(service, token, work) {
  const before = await scrape(service.url, token);
  const cpu = service.cpuSeconds();
  const logs = workerLogs.lines;
  const started = performance.now();
  const result = await work();
  const seconds = (performance.now() - started) / 1000;
  const after = await scrape(service.url, token);
  return { grown: grew(before, after), cpuSeconds: service.cpuSeconds() - cpu, seconds, result, logLines: workerLogs.lines - logs };
}

export const TOKEN = "bench-admin-token";

/** What one window billed, by line: object calls by class, rows, KV, R2 and Analytics Engine. */
export function billedIn(grown) {
  const calls = (object) => total(grown, "mds_object_requests_total", { object, kind: "call" });
  const objects = new Set([...grown.keys()].map((s) => /object="([^"]+)"/.exec(s)?.[1]).filter(Boolean));
  return {
    calls: Object.fromEntries([...objects].map((o) => [o, calls(o)])),
    /** Rows written and alarms by object class. */
    rowsWrittenBy: Object.fromEntries([...objects].map((o) => [o, total(grown, "mds_storage_rows_written_total", { object: o })])),
    alarmsBy: Object.fromEntries([...objects].map((o) => [o, total(grown, "mds_object_requests_total", { object: o, kind: "alarm" })])),
    alarms: total(grown, "mds_object_requests_total", { kind: "alarm" }),
    messages: total(grown, "mds_object_requests_total", { kind: "message" }),
    rowsWritten: total(grown, "mds_storage_rows_written_total"),
    rowsRead: total(grown, "mds_storage_rows_read_total"),
    kvReads: total(grown, "mds_kv_operations_total", { op: "read" }),
    kvWrites: total(grown, "mds_kv_operations_total") - total(grown, "mds_kv_operations_total", { op: "read" }),
    r2: {
      aStandard: total(grown, "mds_bucket_operations_total", { class: "A", storage: "Standard" }),
      aInfrequent: total(grown, "mds_bucket_operations_total", { class: "A", storage: "InfrequentAccess" }),
      bStandard: total(grown, "mds_bucket_operations_total", { class: "B", storage: "Standard" }),
      bInfrequent: total(grown, "mds_bucket_operations_total", { class: "B", storage: "InfrequentAccess" }),
      bytesInfrequent: total(grown, "mds_bucket_bytes_read_total", { storage: "InfrequentAccess" }),
    },
    points: total(grown, "mds_analytics_points_total"),
  };
}

/** y = fixed + perUnit·x over points `[x, y]`, neither below zero: a market-day's (or hour's) fixed part and its part per unit. */
export function line(points) {
  // One size only (every x the same): the mean is all there is to fit.
  if (points.every(([x]) => x === points[0][0])) return { fixed: points.reduce((sum, [, y]) => sum + y, 0) / points.length, perUnit: 0 };
  const [fixed, perUnit] = fitNonNegative(
    points.map(([x]) => [1, x]),
    points.map(([, y]) => y),
  );
  return { fixed, perUnit };
}
