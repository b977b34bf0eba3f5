import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { principalOfKey } from "../../src/access/keys";
import { publishChannel } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { seriesKey } from "../../src/metrics/counts";
import { isolateMetrics } from "../../src/metrics/holder";
import type { PublishChannel } from "../../src/publish/publish-channel-object";
import { ensureRegistry } from "../../src/registry/copy";
import { newPublishKey } from "../support/accounts";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openPublisher, openSocket } from "./streams-support";

const T0 = Date.now();

/** The requests an object class served since the last call, billed (`call`) and on sessions (`session`). */
async function requestsOf(object: string, symbol = "SOLUSDT"): Promise<{ billed: number; onSessions: number }> {
  // Every object of the test runs in this isolate, and counts into its one holder.
  return runInDurableObject(await hostOf(symbol), async () => {
    const counters = isolateMetrics.counts.take().counters;
    return {
      billed: counters[seriesKey("mds_object_requests_total", { object, kind: "call" })] ?? 0,
      onSessions: counters[seriesKey("mds_object_requests_total", { object, kind: "session" })] ?? 0,
    };
  });
}

describe("RPC sessions: a caller's calls into a busy object are one billed request (src/rpc-sessions/)", () => {
  it("a publisher channel's calls into a group ride one session: 8 gathered calls, one billed request (fails before: 8); a host restarted under it costs one refused batch, then a new session", async () => {
    await ensureRegistry(env);
    const key = await newPublishKey();
    const socket = await openPublisher(key, "203.0.131.21");
    await runInDurableObject(publishChannel(env, principalOfKey(key.id)), async (instance: PublishChannel) => {
      instance.sessionIdleMs = 60_000; // as deployed: a busy channel's session stays open
    });
    let id = 0;
    const send = async (n: number) => {
      const sent = ++id;
      socket.ws.send(
        JSON.stringify({ id: sent, symbol: "SOLUSDT", trades: [{ id: `session-${n}`, price: "150.000", quantity: "1.00", side: "buy", time: T0 + n }] }),
      );
      await until(() => socket.messages.some((m) => m.id === sent), { what: `the answer to batch ${n}` });
      return socket.messages.find((m) => m.id === sent);
    };
    await requestsOf("market");
    // One at a time: each batch is its own call into the host.
    for (let n = 0; n < 8; n++) expect((await send(n)).result, `batch ${n}'s answer`).toMatchObject({ acceptedTrades: 1 });
    const calls = await requestsOf("market");
    expect(calls.onSessions, "calls into the host on the session").toBe(8);
    expect(calls.billed, "billed requests into the host for 8 calls (the session's opening)").toBe(1);

    await runInDurableObject(await hostOf("SOLUSDT"), (_instance, state) => state.abort("the host restarted")).catch(() => {});
    const afterRestart = await send(8);
    const resent = afterRestart.error ? await send(8) : afterRestart;
    expect(resent.result, "the batch after the restart, sent again if the broken session refused it").toMatchObject({ acceptedTrades: 1 });
    expect((await send(9)).result, "the next batch, on the new session").toMatchObject({ acceptedTrades: 1 });
    const trades = await callJson<{ id: string }[]>("/api/trades/SOLUSDT?limit=20");
    expect(trades.body.map((t) => t.id).sort(), "every acknowledged trade once").toEqual(Array.from({ length: 10 }, (_, n) => `session-${n}`).sort());
    socket.ws.close();
  });

  it("a group's relay calls a shard on one session: 10 deliveries, no billed request after the first (fails before: 10)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("ETHUSDT");
    await runInDurableObject(host, (instance: MarketObject) => {
      instance.relay.sessionIdleMs = 60_000;
    });
    await ingest(env, "*", { symbol: "ETHUSDT", book: { type: "snapshot", sequence: 1, bids: [["2999.00", "1.0000"]], asks: [["3001.00", "1.0000"]] } });
    const subscriber = await openSocket("/api/ws?streams=book.ETHUSDT", "203.0.131.22");
    await until(() => subscriber.messages.some((m) => m.stream === "book.ETHUSDT"), { what: "the base book" });
    // Each delta once the one before reached the subscriber: a delivery each.
    const delta = async (sequence: number) => {
      await ingest(env, "*", { symbol: "ETHUSDT", book: { type: "delta", sequence, bids: [[`${2990 - sequence}.00`, "1.0000"]], asks: [] } });
      await until(() => subscriber.messages.some((m) => m.data?.sequence === sequence), { what: `delta ${sequence} delivered` });
    };
    await delta(2);
    await requestsOf("shard", "ETHUSDT");
    for (let sequence = 3; sequence <= 12; sequence++) await delta(sequence);
    const calls = await requestsOf("shard", "ETHUSDT");
    expect(calls.onSessions, "deliveries into the shard on the session").toBeGreaterThanOrEqual(10);
    expect(calls.billed, "billed requests into the shard for 10 deliveries").toBe(0);
    subscriber.ws.close();
  });
});
