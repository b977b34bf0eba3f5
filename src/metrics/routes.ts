import { z } from "@hono/zod-openapi";
import { operatorRoute } from "../admin/auth";
import { marketObject, metricsObject, priceIndex } from "../core/object-ids";
import { problemResponses } from "../core/schemas";
import type { MarketAnswer } from "../domain/market-answer";
import { GROUP_SIZE } from "../domain/market-config";
import { createRouter } from "../http/router";
import { ensureRegistry } from "../registry/copy";
import { exposition, type GaugeValue, PROMETHEUS_CONTENT_TYPE } from "./exposition";
import { isolateMetrics } from "./holder";
import { connectionsByDialect } from "./venue-figures";

/**
 * `GET /metrics` for the operator, mounted at `/admin` (docs/operations.md#metrics): the counters
 * and histograms every holder handed on (at most METRICS_FLUSH_MS behind; this isolate's and the
 * shards' are handed on by the scrape itself), and the gauges read now: connections from each
 * shard, markets from the price index. A call to every shard (docs/streams.md#placement) + 2 a scrape.
 *
 * @example
 * app.route("/admin", metricsRoutes);
 */
export const metricsRoutes = createRouter().openapi(
  operatorRoute("get", "/metrics", {
    operationId: "scrapeMetrics",
    summary: "Operator metrics in the Prometheus text format",
    description:
      "Families mds_http_requests_total{route,status}, mds_rate_limited_total{scope}, mds_stream_connections{dialect}, mds_stream_messages_sent_total, mds_stream_catch_ups_total{result}, mds_stream_catch_up_reads_total{kind}, mds_history_reads_total{segment}, mds_history_closed_reads_total{source}, mds_tardis_reads_total{kind,source}, mds_stream_catch_up_bytes_total, mds_relay_shard_calls_total, mds_stream_delivery_seconds, mds_publish_batches_total{result}, mds_publish_ack_seconds, mds_markets{status}, mds_settlement_callbacks_total{result}, mds_market_failures_total{symbol,stage}, mds_host_storage_warnings_total{group,level}, mds_host_storage_bytes{group}, mds_history_files_total{kind,result}, mds_kv_operations_total{op}, mds_bucket_operations_total{class,storage}, mds_bucket_bytes_read_total{storage}, mds_analytics_points_total, and the objects' own mds_storage_rows_written_total{object}, mds_storage_table_rows_written_total{object,table}, mds_storage_rows_read_total{object}, mds_object_requests_total{object,kind} (docs/operations.md#metrics). Counters are the venue's totals, gathered from every isolate, shard and publisher channel at most METRICS_FLUSH_MS (10 s) behind.",
    responses: {
      200: { description: "Prometheus text format 0.0.4", content: { "text/plain": { schema: z.string() } } },
      ...problemResponses(401, 429, 503),
    },
  }),
  async (c) => {
    const flushed = isolateMetrics.flush(c.env, Date.now(), true);
    if (flushed) await flushed;
    // The shards hand on their counts first, so the totals read after them hold them.
    const byDialect = await connectionsByDialect(c.env);
    // Each market host's storage: a call per group (32 at the venue's 2,000 markets).
    const groups = Math.ceil((await ensureRegistry(c.env)).snapshot.markets.length / GROUP_SIZE);
    const storage = await Promise.all(
      Array.from({ length: groups }, (_, g) => marketObject(c.env, { ordinal: g * GROUP_SIZE }).storageBytes() as Promise<number>),
    );
    const [totals, answer] = await Promise.all([metricsObject(c.env).totalsNow(), priceIndex(c.env).status() as Promise<MarketAnswer>]);
    const status = JSON.parse(answer.text) as { trading: number; stale: number; halted: number };
    const gauges: GaugeValue[] = [
      ...Object.entries(byDialect).map(([dialect, value]) => ({ family: "mds_stream_connections" as const, labels: `dialect="${dialect}"`, value })),
      { family: "mds_markets", labels: 'status="trading"', value: status.trading - status.stale },
      { family: "mds_markets", labels: 'status="stale"', value: status.stale },
      { family: "mds_markets", labels: 'status="halted"', value: status.halted },
      ...storage.map((value, group) => ({ family: "mds_host_storage_bytes" as const, labels: `group="${group}"`, value })),
    ];
    return c.text(exposition(totals, gauges), 200, { "Content-Type": PROMETHEUS_CONTENT_TYPE });
  },
);
