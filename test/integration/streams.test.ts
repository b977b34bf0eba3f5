import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sign, signingPayload } from "../../src/access/signature";
import { ingest } from "../../src/market/ingest";
import { shardOf } from "../../src/streams/protocol";
import { newKey } from "../support/accounts";
import { call } from "../support/http";

function upgrade(path: string, ip: string, headers: Record<string, string> = {}) {
  return call(path, { ip, headers: { Upgrade: "websocket", ...headers } });
}

async function openSocket(path: string, ip: string, headers?: Record<string, string>) {
  const response = await upgrade(path, ip, headers);
  expect(response.status).toBe(101);
  const ws = response.webSocket!;
  const messages: any[] = [];
  ws.addEventListener("message", (event) => messages.push(JSON.parse(event.data as string)));
  ws.accept();
  return { ws, messages };
}

async function until<T>(read: () => T | undefined, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("streams in workerd", () => {
  it("connection slots survive hibernation of the shard: a sixth is still refused, a freed one is reusable", async () => {
    const ip = "192.0.2.200";
    const sockets = [];
    for (let i = 0; i < 5; i++) sockets.push(await openSocket("/api/ws", ip));
    const shard = env.STREAM_HUB.getByName(shardOf(`ip:${ip}`, Number(env.STREAM_SHARDS)));
    await evictDurableObject(shard, { webSockets: "hibernate" });
    const sixth = await upgrade("/api/ws", ip);
    expect(sixth.status).toBe(429);
    expect(((await sixth.json()) as { code: string }).code).toBe("STREAM_LIMIT");
    sockets[0]!.ws.close(1000, "bye");
    let reopened: Response | undefined;
    for (let attempt = 0; attempt < 20 && reopened?.status !== 101; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      reopened = await upgrade("/api/ws", ip);
    }
    expect(reopened!.status).toBe(101);
    for (const s of sockets.slice(1)) s.ws.close();
  });

  it("a hibernated shard wakes for a market's update and subscribers keep receiving it", async () => {
    const ip = "192.0.2.201";
    const { ws, messages } = await openSocket("/api/ws?streams=trades.XRPUSDT", ip);
    await until(() => messages.find((m) => m.result));
    await evictDurableObject(env.STREAM_HUB.getByName(shardOf(`ip:${ip}`, Number(env.STREAM_SHARDS))), { webSockets: "hibernate" });
    await ingest(env, { symbol: "XRPUSDT", trades: [{ id: "wake-1", price: "0.6001", quantity: "10", side: "buy", time: Date.now() }] });
    const trade = await until(() => messages.find((m) => m.stream === "trades.XRPUSDT"));
    expect(trade.data).toEqual({ id: "wake-1", price: "0.6001", quantity: "10.0", side: "buy", time: expect.any(Number) });
    ws.close();
  });

  it("/v1/ws takes the signed headers or, for browsers, the query form; it needs the stream permission", async () => {
    const streamer = await newKey({ permissions: ["stream"] });
    const timestamp = Date.now();
    const signature = await sign(streamer.secret, signingPayload(timestamp, "GET", "/v1/ws", ""));
    const viaQuery = await upgrade(`/v1/ws?apiKey=${streamer.id}&timestamp=${timestamp}&signature=${signature}`, "192.0.2.202");
    expect(viaQuery.status).toBe(101);
    viaQuery.webSocket!.accept();
    viaQuery.webSocket!.close();
    const target = "/v1/ws?streams=ticker.BTCUSDT";
    const headerSig = await sign(streamer.secret, signingPayload(timestamp, "GET", target, ""));
    const viaHeaders = await upgrade(target, "192.0.2.202", { "X-API-KEY": streamer.id, "X-TIMESTAMP": String(timestamp), "X-SIGNATURE": headerSig });
    expect(viaHeaders.status).toBe(101);
    viaHeaders.webSocket!.accept();
    viaHeaders.webSocket!.close();
    const reader = await newKey({ permissions: ["read"] });
    const readerSig = await sign(reader.secret, signingPayload(timestamp, "GET", "/v1/ws", ""));
    const refused = await upgrade(`/v1/ws?apiKey=${reader.id}&timestamp=${timestamp}&signature=${readerSig}`, "192.0.2.202");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("PERMISSION_DENIED");
  });

  it("a plain GET of a WebSocket endpoint is a 400 problem", async () => {
    const response = await call("/api/ws");
    expect(response.status).toBe(400);
    expect(response.headers.get("Content-Type")).toBe("application/problem+json");
  });
});

describe("shards stop hearing from markets nobody there watches", () => {
  it("after the last subscriber leaves, the next update unsubscribes the shard from the market", async () => {
    const { runInDurableObject } = await import("cloudflare:test");
    const shardsOf = () =>
      runInDurableObject(env.MARKET.getByName("ETHBTC"), async (_instance, state) => {
        const row = state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'shards'").toArray()[0];
        return JSON.parse(row?.value ?? "[]") as string[];
      });
    const { ws, messages } = await openSocket("/api/ws?streams=trades.ETHBTC", "192.0.2.210");
    await until(() => messages.find((m) => m.result));
    expect(await shardsOf()).toHaveLength(1);
    ws.close(1000, "done");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await ingest(env, { symbol: "ETHBTC", trades: [{ id: "release-1", price: "0.035", quantity: "1", side: "buy", time: Date.now() }] });
    let shards: string[] = ["pending"];
    for (let attempt = 0; attempt < 40 && shards.length > 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      shards = await shardsOf();
    }
    expect(shards).toEqual([]);
  });
});
