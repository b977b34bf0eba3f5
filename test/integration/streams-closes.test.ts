import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { everyShard } from "../../src/streams/every-shard";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, shardOfConnection } from "./streams-support";

const admin = { Authorization: "Bearer test-admin-token", "Content-Type": "application/json" };
const closeStreams = (body: unknown, headers: Record<string, string> = admin) =>
  callJson("/admin/streams/close", { method: "POST", headers, body: JSON.stringify(body) });

describe("planned closes: announced, then closed with a code and a reason (docs/streams.md#closes-and-ended-streams)", () => {
  it("restart: every connection of the shard is told (native `closing`, Binance `serverShutdown`), so is one that opens during the grace; at the end all close 1012", async () => {
    const ip = "192.0.2.150";
    const native = await openSocket("/api/ws?streams=ticker.BTCUSDT", ip);
    const binance = await openSocket("/binance/ws/btcusdt@bookTicker", ip);
    const combined = await openSocket("/binance/stream?streams=btcusdt@trade", ip);
    await until(() => native.messages.find((m) => m.result), { what: "the native subscribe ack" });

    // Both name BTCUSDT: they are on a shard of its group (docs/streams.md#placement).
    const shardName = await shardOfConnection(`ip:${ip}`, ["BTCUSDT"]);
    const before = Date.now();
    const answer = await closeStreams({ kind: "restart", graceSeconds: 30, shard: shardName });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({
      kind: "restart",
      code: 1012,
      reason: "the service restarts; reconnect",
      shards: [{ shard: shardName, connections: 3 }],
    });
    expect(answer.body.closeAt, "closes after the grace").toBeGreaterThanOrEqual(before + 30_000);

    const notice = await until(() => native.messages.find((m) => m.op === "closing"), { what: "the native notice" });
    expect(notice).toEqual({ op: "closing", code: 1012, reason: "the service restarts; reconnect", closeAt: answer.body.closeAt });
    const shutdown = await until(() => binance.messages.find((m) => m.e === "serverShutdown"), { what: "Binance's serverShutdown" });
    expect(shutdown).toEqual({ e: "serverShutdown", E: expect.any(Number) });
    // A combined connection gets it in its envelope, as every frame it gets.
    const wrapped = await until(() => combined.messages.find((m) => m.data?.e === "serverShutdown"), { what: "the combined serverShutdown" });
    expect(wrapped).toEqual({ stream: "serverShutdown", data: { e: "serverShutdown", E: expect.any(Number) } });
    const late = await openSocket("/api/ws?streams=trades.BTCUSDT", ip);
    expect(await until(() => late.messages.find((m) => m.op === "closing"), { what: "the notice to a connection opened during the grace" })).toEqual(notice);

    // The injected clock: the grace ends now instead of in 30 s.
    const shard = env.STREAM_HUB.getByName(shardName);
    await runInDurableObject(shard, (_instance, state) => {
      const closing = state.storage.kv.get<{ closeAt: number }>("closing");
      state.storage.kv.put("closing", { ...closing, closeAt: 0 });
    });
    expect(await runDurableObjectAlarm(shard), "the announcement armed the shard's alarm").toBe(true);
    for (const [name, socket] of [
      ["native", native],
      ["binance", binance],
      ["combined", combined],
      ["late", late],
    ] as const) {
      expect(await socket.closed, `${name} closes with the restart's code and reason`).toEqual({ code: 1012, reason: "the service restarts; reconnect" });
    }

    // Over: the shard takes connections as before, with no notice.
    const after = await openSocket("/api/ws?streams=trades.BTCUSDT", ip);
    after.ws.send(JSON.stringify({ op: "ping", id: 1 }));
    await until(() => after.messages.find((m) => m.id === 1), { what: "the pong" });
    expect(
      after.messages.filter((m) => m.op === "closing"),
      "no notice once the close is done",
    ).toEqual([]);
    after.ws.close();
  });

  it("going-away with no grace closes every shard's connections at once with 1001", async () => {
    const sockets = await Promise.all(["192.0.2.160", "192.0.2.161", "192.0.2.162"].map((ip) => openSocket("/api/ws", ip)));
    const answer = await closeStreams({ kind: "going-away", graceSeconds: 0 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(
      answer.body.shards.map((s: { shard: string }) => s.shard),
      "the general pool and every group's shards",
    ).toEqual(await everyShard(env));
    for (const socket of sockets) {
      expect(await socket.closed).toEqual({ code: 1001, reason: "this stream shard goes away; reconnect" });
      expect(
        socket.messages.find((m) => m.op === "closing"),
        "told before the close",
      ).toMatchObject({ code: 1001 });
    }
    const audit = await callJson("/admin/audit", { headers: admin });
    expect(audit.status).toBe(200);
    expect(JSON.stringify(audit.body), "the close is in the audit log").toContain("streams.close");
  });

  it("bad input is a 400 problem; without the operator token a 401; nothing is announced", async () => {
    const socket = await openSocket("/api/ws", "192.0.2.170");
    for (const [body, what] of [
      [{ kind: "restart", shard: Number(env.STREAM_SHARDS) }, "a shard that does not exist"],
      [{ kind: "restart", shard: "group-9999-shard-0" }, "a group shard that does not exist"],
      [{ kind: "restart", graceSeconds: 601 }, "a grace over 600 s"],
      [{ kind: "reboot" }, "an unknown kind"],
      [{ kind: "restart", graceSeconds: 1.5 }, "a fractional grace"],
      [{ kind: "restart", extra: true }, "an unknown field"],
    ] as const) {
      const answer = await closeStreams(body);
      expect(answer.status, what).toBe(400);
      expect(answer.body.code, what).toBe("VALIDATION_FAILED");
    }
    expect((await closeStreams({ kind: "restart" }, { "Content-Type": "application/json" })).status).toBe(401);
    socket.ws.send(JSON.stringify({ op: "ping", id: 1 }));
    await until(() => socket.messages.find((m) => m.id === 1), { what: "the pong" });
    expect(socket.messages.filter((m) => m.op === "closing")).toEqual([]);
    socket.ws.close();
  });
});
