import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PRICE_SNAPSHOT_KEY } from "../../src/market/price-index-object";
import { isolateMetrics } from "../../src/metrics/holder";
import { forgetIsolatePriceCopy, readPriceSnapshot } from "../../src/reads/price-cache";

const KV_READS = 'mds_kv_operations_total{op="read"}';

describe("the price snapshot is read from KV once a second per location (docs/capacity.md#the-whole-bill)", () => {
  it("20 requests at once make one KV read (before: 20); another isolate of the location within the second reads none; after it, one", async () => {
    const snapshot = { asOf: 1_795_000_000_000, markets: {} };
    await env.PRICES.put(PRICE_SNAPSHOT_KEY, JSON.stringify(snapshot));
    const t = Date.now() + 60_000;
    forgetIsolatePriceCopy();
    isolateMetrics.counts.take();
    const answers = await Promise.all(Array.from({ length: 20 }, () => readPriceSnapshot(env, t)));
    expect(
      answers.every((a) => a?.asOf === snapshot.asOf),
      "every answer is the snapshot",
    ).toBe(true);
    expect(isolateMetrics.counts.take().counters[KV_READS], "KV reads for 20 requests at once").toBe(1);
    forgetIsolatePriceCopy();
    expect((await readPriceSnapshot(env, t + 500))?.asOf).toBe(snapshot.asOf);
    expect(isolateMetrics.counts.take().counters[KV_READS] ?? 0, "KV reads of another isolate within the second").toBe(0);
    forgetIsolatePriceCopy();
    await readPriceSnapshot(env, t + 1_500);
    expect(isolateMetrics.counts.take().counters[KV_READS], "KV reads once the location's copy is a second old").toBe(1);
  });
});
