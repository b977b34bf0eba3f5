import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { billed } from "../../src/metrics/billed-bindings";
import { isolateMetrics } from "../../src/metrics/holder";

const op = (cls: string, storage: string) => `mds_bucket_operations_total{class="${cls}",storage="${storage}"}`;

describe("KV, R2 and Analytics Engine operations are counted as billed (docs/operations.md#metrics)", () => {
  it("R2: puts and lists are class A by their storage class, gets class B with the bytes they retrieved, deletes free", async () => {
    const bucket = billed(env, "HISTORY");
    isolateMetrics.counts.take();
    await bucket.put("billed/standard", "x".repeat(1000));
    await bucket.put("billed/day.zip", "y".repeat(2000), { storageClass: "InfrequentAccess" });
    const whole = await bucket.get("billed/day.zip");
    await whole?.arrayBuffer();
    const part = await bucket.get("billed/standard", { range: { offset: 100, length: 300 } });
    await part?.arrayBuffer();
    expect(await bucket.get("billed/missing")).toBeNull();
    await bucket.head("billed/day.zip");
    await bucket.list({ prefix: "billed/" });
    await bucket.delete(["billed/standard", "billed/day.zip"]);
    const upload = await bucket.createMultipartUpload("billed/multi", { storageClass: "InfrequentAccess" });
    const first = await upload.uploadPart(1, "z".repeat(5 * 1024 * 1024));
    await upload.complete([first]);
    await bucket.delete("billed/multi");
    const counts = isolateMetrics.counts.take().counters;
    expect(counts[op("A", "Standard")], "a Standard put and a list").toBe(2);
    expect(counts[op("A", "InfrequentAccess")], "an IA put, the multipart upload's create, part and complete").toBe(4);
    expect(counts[op("B", "InfrequentAccess")], "the IA get and head").toBe(2);
    expect(counts[op("B", "Standard")], "the ranged get and the missing key's").toBe(2);
    expect(counts[op("free", "Standard")], "the deletes").toBe(2);
    expect(counts['mds_bucket_bytes_read_total{storage="InfrequentAccess"}'], "the IA object's bytes").toBe(2000);
    expect(counts['mds_bucket_bytes_read_total{storage="Standard"}'], "the range's bytes").toBe(300);
  });

  it("KV: a key read, a write, a list; Analytics Engine: each point written", async () => {
    const kv = billed(env, "PRICES");
    isolateMetrics.counts.take();
    await kv.put("billed-key", "1");
    expect(await kv.get("billed-key")).toBe("1");
    await kv.getWithMetadata("billed-key");
    await kv.list({ prefix: "billed-" });
    await kv.delete("billed-key");
    billed(env, "REQUEST_EVENTS").writeDataPoint({ doubles: [1] });
    billed(env, "REQUEST_EVENTS").writeDataPoint({ doubles: [2] });
    const counts = isolateMetrics.counts.take().counters;
    expect(counts['mds_kv_operations_total{op="read"}'], "two reads").toBe(2);
    expect(counts['mds_kv_operations_total{op="write"}']).toBe(1);
    expect(counts['mds_kv_operations_total{op="list"}']).toBe(1);
    expect(counts['mds_kv_operations_total{op="delete"}']).toBe(1);
    expect(counts.mds_analytics_points_total, "two points").toBe(2);
  });
});
