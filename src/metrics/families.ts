/**
 * The operator metrics (docs/operations.md#metrics): every family the service exports, with its
 * type and help text, and the buckets of its histograms. Names are the contract: never rename one.
 */

/** Seconds, from 1 ms to 10 s: where stream delivery and publish acks fall. */
export const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const counter = (help: string) => ({ type: "counter", help }) as const;
const gauge = (help: string) => ({ type: "gauge", help }) as const;
const histogram = (help: string) => ({ type: "histogram", help }) as const;

export const FAMILIES = {
  mds_http_requests_total: counter("HTTP requests answered, by route pattern and status"),
  mds_rate_limited_total: counter("Requests and connections refused by a limit (429), by scope: public, signed, publish, stream"),
  mds_stream_connections: gauge("Open stream connections, by dialect (native, binance)"),
  mds_stream_messages_sent_total: counter("Frames the stream shards sent to their connections"),
  mds_stream_catch_ups_total: counter(
    "Stream subscriptions that started in the past (from=), by result: started, live (met the live stream), failed (went live from now)",
  ),
  mds_stream_catch_up_reads_total: counter("A catch-up's reads of a market's history, by kind: book (a page of changes), trades (a page of trades)"),
  mds_history_reads_total: counter(
    "Reads of a market's book history at its host (a book at a moment or sequence, a replay or catch-up page), by segment: open (the log's) or closed (a kept one: R2, or the host's SQLite until its upload)",
  ),
  mds_history_closed_reads_total: counter(
    "Reads of closed book history and of archived trade chunks where they were asked (an isolate or a stream shard, never the market's host), by where the block or chunk came from: memory (decoded in that isolate), cache (the location's), r2 (a range read, or a whole chunk)",
  ),
  mds_tardis_reads_total: counter(
    "Reads of the Tardis-compatible API, by kind (details, minute: a data-feed minute, dataset: a day's file) and source: edge (closed history and R2 only, no market's host called), host (a market's host answered part: open history, trades), cache (the location's)",
  ),
  mds_stream_catch_up_bytes_total: counter("Bytes of history a catch-up sent its connections before they met the live streams"),
  mds_relay_shard_calls_total: counter("Calls from the group relays into the stream shards (each carries a tick's events of the markets the shard wants)"),
  mds_stream_delivery_seconds: histogram("From a market applying a book update to a shard sending it"),
  mds_publish_batches_total: counter("Ingest batches (POST /v1/ingest and the publisher channel), by result: applied, duplicate, refused"),
  mds_publish_ack_seconds: histogram("From a publisher channel receiving a batch to its answer"),
  mds_markets: gauge("Listed markets by status: trading (feed fresh), stale (trading, feed silent), halted"),
  mds_settlement_callbacks_total: counter("Settlement callbacks answered, by result: applied, held, duplicate, refused, error"),
  mds_storage_rows_written_total: counter("Durable Object storage rows written (each index entry, key and alarm a row, as billed), by object class"),
  mds_storage_table_rows_written_total: counter(
    "The same rows written, by object class and table (a market's tables by their name without its prefix; kv, alarm and schema for those writes)",
  ),
  mds_storage_rows_read_total: counter("Durable Object storage rows read, by object class"),
  mds_market_failures_total: counter(
    "A market's failures inside its group's host, by symbol and stage (load or commit: the market is held alone; alarm: retried on its own back-off)",
  ),
  mds_host_storage_warnings_total: counter(
    "A market host's minutes with its storage past 80 % of 10 GB (level 80) or past 98 %, taking no batches (level 98), by group",
  ),
  mds_history_files_total: counter(
    "History files built off the market hosts (an hour's book files: kind book), by result: written, empty (no update in the hour), failed (a round of retries spent; tried again an hour later)",
  ),
  mds_host_storage_bytes: gauge("Each market host's SQLite size in bytes, by group (Cloudflare's limit: 10 GB an object)"),
  mds_kv_operations_total: counter("Workers KV operations, as billed, by op: read (a key), write, delete, list"),
  mds_bucket_operations_total: counter(
    "R2 operations (the HISTORY bucket), by class (A: put, multipart, list; B: get, head; free: delete, abort) and the storage class they touch (Standard, InfrequentAccess)",
  ),
  mds_bucket_bytes_read_total: counter("Bytes R2 gets retrieved, by storage class (Infrequent Access bills them)"),
  mds_analytics_points_total: counter("Workers Analytics Engine data points written (each billed past 10 million a month)"),
  mds_object_requests_total: counter(
    "Requests Durable Objects served, by object class and kind: call (RPC, fetch), alarm, message (WebSocket, billed 20 to a request)",
  ),
} as const;

export type Family = keyof typeof FAMILIES;
export type Labels = Readonly<Record<string, string>>;
