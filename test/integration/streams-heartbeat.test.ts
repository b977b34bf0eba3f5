import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../src/streams/placement";
import { until } from "../support/poll";
import { openSocket } from "./streams-support";

const shardStub = (ip: string) => env.STREAM_HUB.getByName(shardOf(`ip:${ip}`, Number(env.STREAM_SHARDS)));

describe("the server heartbeat (docs/streams.md#heartbeat)", () => {
  it("a connection that subscribes to heartbeat gets {time, sequence} from the shard's alarm, the sequence rising by one; others get nothing", async () => {
    const ip = "192.0.2.90";
    const s = await openSocket("/api/ws", ip);
    s.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["heartbeat"] }));
    expect(await until(() => s.messages.find((m) => m.id === 1))).toEqual({ id: 1, result: { streams: ["heartbeat"] } });
    const quiet = await openSocket("/api/ws?streams=ticker.BTCUSDT", ip);
    const shard = shardStub(ip);
    // The injected clock: the heartbeat is made due now instead of in 5 s (the alarm serves other duties too).
    const due = () => runInDurableObject(shard, (_instance, state) => state.storage.kv.put("heartbeatDue", 0));
    expect(await runInDurableObject(shard, async (_instance, state) => (await state.storage.getAlarm())! - Date.now()), "due within 5 s").toBeLessThanOrEqual(
      5_000,
    );
    await due();
    expect(await runDurableObjectAlarm(shard), "the subscribe set the shard's alarm").toBe(true);
    const first = await until(() => s.messages.find((m) => m.stream === "heartbeat"), { what: "a heartbeat" });
    expect(first.data).toEqual({ time: expect.any(Number), sequence: expect.any(Number) });
    await due();
    expect(await runDurableObjectAlarm(shard), "the alarm set itself again").toBe(true);
    const second = await until(() => s.messages.filter((m) => m.stream === "heartbeat")[1], { what: "a second heartbeat" });
    expect(second.data.sequence).toBe(first.data.sequence + 1);
    expect(
      quiet.messages.filter((m) => m.stream === "heartbeat"),
      "no heartbeat without the subscription",
    ).toEqual([]);
    // Unsubscribed: the next alarm sends nothing and sets no further one.
    s.ws.send(JSON.stringify({ op: "unsubscribe", id: 2, streams: ["heartbeat"] }));
    await until(() => s.messages.find((m) => m.id === 2));
    // The other connection's market sent its base book (else the alarm stays armed to ask again).
    await until(
      () => runInDurableObject(shard, (instance: object) => (instance as { sources: { awaitingBase: Map<string, number> } }).sources.awaitingBase.size === 0),
      {
        what: "no base book awaited",
      },
    );
    expect(await runDurableObjectAlarm(shard)).toBe(true);
    expect(await runDurableObjectAlarm(shard), "no alarm once nobody listens").toBe(false);
    expect(s.messages.filter((m) => m.stream === "heartbeat")).toHaveLength(2);
    s.ws.close();
    quiet.ws.close();
  });
});
