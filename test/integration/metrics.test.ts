import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { IDLE_EVICTION_MS } from "../../src/core/alarms";
import { metricsObject, publishChannel } from "../../src/core/object-ids";
import { newPublishKey } from "../support/accounts";
import { evictWhenIdle } from "../support/evict";
import { approveGateway, callbackBody, deliver } from "../support/gateways";
import { call } from "../support/http";
import { until } from "../support/poll";
import { openPublisher, openSocket } from "./streams-support";

const admin = { Authorization: "Bearer test-admin-token" };

/** Prometheus text as series → value (`# HELP`/`# TYPE` lines checked for shape, then skipped). */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.trimEnd().split("\n")) {
    if (line.startsWith("# ")) {
      expect(line, "a comment is HELP or TYPE").toMatch(/^# (HELP|TYPE) mds_[a-z_]+ .+$/);
      continue;
    }
    const match = /^(mds_[a-z_]+(?:\{[^}]*\})?) (-?[0-9.e+-]+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    series.set(match[1]!, Number(match[2]));
  }
  return series;
}

async function scrape(): Promise<Map<string, number>> {
  const response = await call("/admin/metrics", { headers: admin });
  expect(response.status).toBe(200);
  expect(response.headers.get("Content-Type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return parse(await response.text());
}

describe("operator metrics (docs/operations.md#metrics)", () => {
  it("after known traffic, /admin/metrics shows exactly it: requests by route and status, 429s by scope, connections by dialect, batches, acks and callbacks", async () => {
    // 11 reads from one address in a second: the 11th is over the public limit.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await call("/api/ticker/BTCUSDT", { ip: "198.18.160.1" })).status);
    expect(
      statuses.filter((s) => s === 429),
      "one refused",
    ).toHaveLength(1);

    // Five stream connections: four native, one in the Binance dialect.
    const sockets = await Promise.all([1, 2, 3, 4].map((i) => openSocket("/api/ws?streams=book.ETHUSDT", `198.18.161.${i}`)));
    sockets.push(await openSocket("/binance/ws/ethusdt@depth", "198.18.161.9"));

    // Three batches on a publisher channel: applied, duplicate, refused.
    const key = await newPublishKey();
    const channel = await openPublisher(key, "198.18.162.1");
    const batch = { symbol: "ETHUSDT", trades: [{ id: "m-1", price: "3000.00", quantity: "0.5000", side: "buy", time: Date.now() }] };
    for (const [id, body] of [
      [1, batch],
      [2, batch],
      [3, { symbol: "NOPEUSDT", trades: [] }],
    ] as const) {
      channel.ws.send(JSON.stringify({ id, ...body }));
      await until(() => channel.messages.find((m) => m.id === id), { what: `the answer to batch ${id}` });
    }

    // One settlement callback.
    const gateway = await approveGateway("Metrics Gateway");
    const callback = await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_metrics", sequence: 1, status: "pending" }));
    expect(callback.status).toBe(200);

    // The channel's counts are not due for 10 s: its alarm, set for then, hands them on (run now).
    expect(await runDurableObjectAlarm(publishChannel(env, `key:${key.id}`)), "the channel's alarm ran").toBe(true);
    const metrics = await scrape();
    const value = (series: string) => metrics.get(series) ?? 0;
    expect(value('mds_http_requests_total{route="/api/ticker/:pair",status="200"}'), "10 answered reads").toBe(10);
    expect(value('mds_http_requests_total{route="/api/ticker/:pair",status="429"}'), "1 refused read").toBe(1);
    expect(value('mds_rate_limited_total{scope="public"}'), "429s of the public scope").toBe(1);
    expect(value('mds_stream_connections{dialect="native"}'), "native connections (and the publisher's is none of them)").toBe(4);
    expect(value('mds_stream_connections{dialect="binance"}'), "Binance connections").toBe(1);
    expect(value('mds_publish_batches_total{result="applied"}')).toBe(1);
    expect(value('mds_publish_batches_total{result="duplicate"}')).toBe(1);
    expect(value('mds_publish_batches_total{result="refused"}')).toBe(1);
    expect(value("mds_publish_ack_seconds_count"), "every batch's ack timed").toBe(3);
    expect(value('mds_publish_ack_seconds_bucket{le="+Inf"}')).toBe(3);
    expect(value('mds_settlement_callbacks_total{result="accepted"}')).toBe(1);
    expect(value('mds_http_requests_total{route="/api/gateway/callback",status="200"}')).toBe(1);
    expect(value("mds_stream_messages_sent_total"), "the shards' frames (acks and books at least)").toBeGreaterThanOrEqual(5);
    expect(value("mds_stream_delivery_seconds_count"), "book messages timed from the market to the shard").toBeGreaterThanOrEqual(1);
    // No feed publishes here: seven trading markets, all stale but ETHUSDT (the batch above).
    expect([value('mds_markets{status="trading"}') + value('mds_markets{status="stale"}'), value('mds_markets{status="halted"}')]).toEqual([7, 0]);
    // Histograms are cumulative and end at their count.
    const buckets = [...metrics].filter(([name]) => name.startsWith("mds_publish_ack_seconds_bucket")).map(([, n]) => n);
    expect(buckets, "cumulative buckets").toEqual([...buckets].sort((a, b) => a - b));

    // A second scrape counts only what happened since: the counters are totals, not re-added.
    const again = await scrape();
    expect(again.get('mds_http_requests_total{route="/api/ticker/:pair",status="200"}')).toBe(10);
    expect(again.get('mds_http_requests_total{route="/admin/metrics",status="200"}'), "the first scrape itself").toBe(1);
    for (const socket of [...sockets, channel]) socket.ws.close();
  });

  it("keeps what it was told through its own eviction: it stores a report before it may be taken out of memory for being idle", async () => {
    const totals = metricsObject(env);
    const series = 'mds_object_requests_total{kind="call",object="eviction-test"}';
    // A store already due (an earlier test's reports) is made first: the alarm read below is this report's.
    await runDurableObjectAlarm(totals);
    await totals.report({ counters: { [series]: 3 }, histograms: {} });
    const reported = Date.now();
    // An idle object may leave memory 10 s after its last request; a store due later (it was 10 s)
    // lost each report of a quiet venue — one isolate telling it every 10 s — to that eviction.
    const alarm = await runInDurableObject(totals, (_object, state) => state.storage.getAlarm());
    expect(alarm, "a store is due").not.toBeNull();
    expect(alarm! - reported, "the store is due well before the idle eviction").toBeLessThanOrEqual(IDLE_EVICTION_MS / 2);
    expect(await runDurableObjectAlarm(totals), "the alarm ran").toBe(true);
    await evictWhenIdle(totals);
    expect((await totals.totalsNow()).counters[series], "the report after the eviction").toBe(3);
  });

  it("is the operator's: no token is 401", async () => {
    expect((await call("/admin/metrics")).status).toBe(401);
  });
});
