import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { streamHub } from "../../src/core/object-ids";
import { isolateMetrics } from "../../src/metrics/holder";
import { openSocket, shardOfConnection } from "./streams-support";

const ROWS = 'mds_storage_rows_written_total{object="shard"}';

describe("a shard's alarm writes what changed, not its duties' every key (docs/capacity.md#cost)", () => {
  it("with no heartbeat, key or notice due, an alarm writes at most its next alarm (fails before: 3 rows an alarm — deleting absent keys, rewriting the notices)", async () => {
    const ip = "203.0.132.7";
    const socket = await openSocket("/api/ws?streams=book.ETHUSDT", ip);
    const shard = streamHub(env, await shardOfConnection(`ip:${ip}`, ["ETHUSDT"]));
    for (let round = 0; round < 3; round++) {
      // The alarm the shard's counts would set (METRICS_FLUSH_MS), set past the meter.
      await runInDurableObject(shard, (_instance, state) => state.storage.setAlarm(Date.now()));
      isolateMetrics.counts.take();
      expect(await runDurableObjectAlarm(shard), `round ${round}: the alarm ran`).toBe(true);
      await runInDurableObject(shard, () => {});
      expect(isolateMetrics.counts.take().counters[ROWS] ?? 0, `round ${round}: rows the shard's alarm wrote`).toBeLessThanOrEqual(1);
    }
    socket.ws.close();
  });
});
