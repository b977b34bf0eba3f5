import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_SERIES, MetricCounts, seriesKey } from "../../src/metrics/counts";
import { exposition } from "../../src/metrics/exposition";
import { SECONDS_BUCKETS } from "../../src/metrics/families";
import { tableOf } from "../../src/metrics/object-meter";
import { quantile } from "../../src/metrics/quantiles";
import { scopeQuery, tablePrefixOf } from "../../src/writes/market-storage";

describe("metric counts, exposition and quantiles (src/metrics)", () => {
  it("counts handed on in any split add up to the counts of all at once (property)", () => {
    // Seconds in 1/1024ths: their sums are exact in any order, so a split can only differ by a
    // counting mistake (any doubles differ in the last bits by the order they were added in).
    const event = fc.tuple(
      fc.constantFrom("200", "404", "429"),
      fc.integer({ min: 0, max: 20 * 1024 }).map((n) => n / 1024),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), fc.array(fc.nat(60), { maxLength: 5 }), (events, cuts) => {
        const whole = new MetricCounts();
        const holder = new MetricCounts();
        const gathered = new MetricCounts();
        events.forEach(([status, seconds], i) => {
          for (const counts of [whole, holder]) {
            counts.add("mds_http_requests_total", { route: "/api/time", status });
            counts.observe("mds_publish_ack_seconds", seconds);
          }
          if (cuts.includes(i)) gathered.merge(holder.take());
        });
        gathered.merge(holder.take());
        expect(holder.empty, "taking empties the holder").toBe(true);
        expect(gathered.snapshot()).toEqual(whole.snapshot());
      }),
    );
  });

  it("writes the Prometheus text format: HELP and TYPE once per family, cumulative buckets ending at +Inf = count", () => {
    const counts = new MetricCounts();
    counts.add("mds_http_requests_total", { status: "200", route: '/a"b' }, 3);
    for (const seconds of [0.0005, 0.003, 0.003, 0.2, 99]) counts.observe("mds_publish_ack_seconds", seconds);
    const text = exposition(counts.snapshot(), [{ family: "mds_stream_connections", labels: 'dialect="native"', value: 4 }]);
    expect(text).toContain('mds_http_requests_total{route="/a\\"b",status="200"} 3\n');
    expect(text).toContain('mds_stream_connections{dialect="native"} 4\n');
    expect(text.match(/^# TYPE mds_publish_ack_seconds histogram$/gm)).toHaveLength(1);
    const buckets = [...text.matchAll(/^mds_publish_ack_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]);
    expect(buckets.map(([le]) => le)).toEqual([...SECONDS_BUCKETS.map(String), "+Inf"]);
    expect(buckets.map(([, n]) => n)).toEqual([1, 1, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5]);
    expect(text).toContain("mds_publish_ack_seconds_count 5\n");
    expect(seriesKey("mds_markets", { status: "stale" })).toBe('mds_markets{status="stale"}');
  });

  it("a holder keeps at most MAX_SERIES series: a caller cannot grow it without bound, and the series it has still count", () => {
    const counts = new MetricCounts();
    for (let i = 0; i < MAX_SERIES + 500; i++) counts.add("mds_http_requests_total", { route: `/r/${i}`, status: "200" });
    counts.add("mds_http_requests_total", { route: "/r/0", status: "200" });
    const { counters } = counts.snapshot();
    expect(Object.keys(counters), "series kept").toHaveLength(MAX_SERIES);
    expect(counters[seriesKey("mds_http_requests_total", { route: "/r/0", status: "200" })], "a kept series still counts").toBe(2);
    expect(counters[seriesKey("mds_http_requests_total", { route: `/r/${MAX_SERIES}`, status: "200" })], "a series past the bound").toBeUndefined();
  });

  it("estimates quantiles as histogram_quantile does: linear within the bucket that holds the rank", () => {
    const buckets = SECONDS_BUCKETS.map(() => 0);
    expect(quantile(0.5, buckets, 0), "nothing measured").toBeNull();
    buckets[0] = 10; // ten observations ≤ 1 ms
    expect(quantile(0.5, buckets, 10)).toBeCloseTo(0.0005);
    buckets[6] = 10; // ten more in (50 ms, 100 ms]
    expect(quantile(0.5, buckets, 20)).toBeCloseTo(0.001);
    expect(quantile(0.99, buckets, 20)).toBeCloseTo(0.05 + 0.05 * 0.98);
    expect(quantile(0.99, buckets, 25), "past the last bound: that bound").toBe(10);
  });
});

describe("rows written by table (src/metrics/object-meter.ts)", () => {
  const statements: [string, string][] = [
    ["INSERT INTO minute_buckets (minute) VALUES (?) ON CONFLICT (minute) DO UPDATE SET open = excluded.open", "minute_buckets"],
    ["INSERT OR REPLACE INTO book_segments (base_seq) VALUES (?)", "book_segments"],
    ["DELETE FROM trade_blocks WHERE last_seq <= ?", "trade_blocks"],
    ["INSERT INTO trade_ids_498802 (minute, n, max_seq, ids) VALUES (?, ?, ?, ?)", "trade_ids"],
    ["  UPDATE meta SET value = ? WHERE key = ?", "meta"],
    ["\nCREATE TABLE IF NOT EXISTS second_buckets (minute INTEGER PRIMARY KEY)", "schema"],
    ["INSERT INTO journal (slot, n, body) VALUES (?, ?, ?)", "journal"],
  ];

  it("names a statement's table the same whatever market's prefix the host gave it (property)", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Z0-9]{2,20}$/), (symbol) => {
        for (const [query, table] of statements) {
          expect(tableOf(scopeQuery(query, tablePrefixOf(symbol))), `${query} in ${symbol}`).toBe(table);
        }
      }),
    );
  });
});
