import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sign, signaturePayload } from "../../src/access/signature";
import { ingest } from "../../src/market/ingest";
import { shardOf } from "../../src/streams/placement";
import { tablePrefixOf } from "../../src/writes/market-storage";
import { newKey, type TestKey } from "../support/accounts";
import { call } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { openSocket, upgrade } from "./streams-support";

const shardCount = Number(env.STREAM_SHARDS);
const shardStub = (principal: string) => env.STREAM_HUB.getByName(shardOf(principal, shardCount));

async function signedQuery(key: TestKey, timestamp = Date.now()): Promise<string> {
  const signature = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: "/v1/ws", body: "" }));
  return `apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`;
}

describe("the protocol in workerd (docs/streams.md)", () => {
  it("subscribe is acked with its id and the connection's streams; list and unsubscribe answer the same way", async () => {
    const s = await openSocket("/api/ws", "192.0.2.1");
    s.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: ["ticker.BTCUSDT", "trades.eth-usdt"] }));
    expect(await until(() => s.messages.find((m) => m.id === 1))).toEqual({ id: 1, result: { streams: ["ticker.BTCUSDT", "trades.ETHUSDT"] } });
    s.ws.send(JSON.stringify({ op: "list", id: "two" }));
    expect(await until(() => s.messages.find((m) => m.id === "two"))).toEqual({ id: "two", result: { streams: ["ticker.BTCUSDT", "trades.ETHUSDT"] } });
    s.ws.send(JSON.stringify({ op: "unsubscribe", id: 3, streams: ["ticker.BTCUSDT"] }));
    expect(await until(() => s.messages.find((m) => m.id === 3))).toEqual({ id: 3, result: { streams: ["trades.ETHUSDT"] } });
    s.ws.send(JSON.stringify({ op: "subscribe", id: 4, streams: ["book.DOGEUSDT"] }));
    expect(await until(() => s.messages.find((m) => m.id === 4))).toEqual({
      id: 4,
      error: { code: "UNKNOWN_STREAM", message: expect.stringContaining("book.DOGEUSDT") },
    });
    s.ws.send(JSON.stringify({ op: "unsubscribe", id: 5, streams: ["trades.ETHUSDT", "nope"] }));
    expect((await until(() => s.messages.find((m) => m.id === 5))).error.code).toBe("UNKNOWN_STREAM");
    s.ws.send(JSON.stringify({ op: "list", id: 6 }));
    expect((await until(() => s.messages.find((m) => m.id === 6))).result.streams).toEqual(["trades.ETHUSDT"]); // a refused request changes nothing
    s.ws.close();
  });

  it('{"op":"ping"} is answered {"op":"pong","time":…}; the text keepalive "ping" gets "pong" from the runtime without waking the shard', async () => {
    const ip = "192.0.2.2";
    const s = await openSocket("/api/ws", ip);
    const before = Date.now();
    s.ws.send(JSON.stringify({ op: "ping" }));
    const pong = await until(() => s.messages.find((m) => m.op === "pong"));
    expect(pong).toEqual({ op: "pong", time: expect.any(Number) });
    expect(Math.abs(pong.time - before)).toBeLessThan(5000);
    s.ws.send(JSON.stringify({ op: "ping", id: 9 }));
    expect(await until(() => s.messages.find((m) => m.id === 9))).toEqual({ op: "pong", id: 9, time: expect.any(Number) });

    s.ws.send("ping");
    expect(await until(() => s.texts.includes("pong") && s.texts)).toEqual(["pong"]);
    const answeredByRuntime = await runInDurableObject(shardStub(`ip:${ip}`), async (_hub, state) => {
      const [socket] = state.getWebSockets(`ip:${ip}`);
      return state.getWebSocketAutoResponseTimestamp(socket!);
    });
    expect(answeredByRuntime).toBeInstanceOf(Date);
    s.ws.close();
  });

  it("?streams= subscribes at connect; an unknown one there is an error message with id null", async () => {
    const good = await openSocket("/api/ws?streams=ticker.BTCUSDT,book.ETHUSDT", "192.0.2.3");
    expect(await until(() => good.messages.find((m) => "result" in m))).toEqual({ id: null, result: { streams: ["ticker.BTCUSDT", "book.ETHUSDT"] } });
    const bad = await openSocket("/api/ws?streams=ticker.BTCUSDT,book.NOPE", "192.0.2.4");
    expect(await until(() => bad.messages.find((m) => "error" in m))).toEqual({
      id: null,
      error: { code: "UNKNOWN_STREAM", message: expect.stringContaining("book.NOPE") },
    });
    good.ws.close();
    bad.ws.close();
  });

  it("abuse: non-JSON and unknown ops are answered until the fourth invalid message closes 1008; oversized frames and floods close 1008; 51 streams are refused", async () => {
    const junk = await openSocket("/api/ws", "192.0.2.5");
    junk.ws.send("not json");
    expect(await until(() => junk.messages.find((m) => m.error))).toEqual({ id: null, error: { code: "INVALID_MESSAGE", message: "messages are JSON text" } });
    junk.ws.send(JSON.stringify({ op: "dance", id: 2 }));
    expect((await until(() => junk.messages.find((m) => m.id === 2))).error.code).toBe("UNKNOWN_OP");
    junk.ws.send(new Uint8Array([1, 2, 3]));
    await until(() => junk.messages.filter((m) => m.error).length === 3);
    junk.ws.send(JSON.stringify({ op: "subscribe", id: 4, streams: Array.from({ length: 51 }, () => "book.BTCUSDT") }));
    expect((await until(() => junk.messages.find((m) => m.id === 4))).error.code).toBe("TOO_MANY_STREAMS"); // not a warning
    junk.ws.send("{");
    expect(await junk.closed).toEqual({ code: 1008, reason: "more than 3 invalid messages" });

    const big = await openSocket("/api/ws", "192.0.2.6");
    big.ws.send(JSON.stringify({ op: "list", id: "x".repeat(4100) }));
    expect(await big.closed).toEqual({ code: 1008, reason: "messages are at most 4096 bytes" });

    const flood = await openSocket("/api/ws", "192.0.2.7");
    for (let i = 0; i < 11; i++) flood.ws.send(JSON.stringify({ op: "list", id: i }));
    expect(await flood.closed).toEqual({ code: 1008, reason: "at most 10 messages per second" });
    expect(flood.messages.filter((m) => m.result)).toHaveLength(10);

    // Ten in a second are fine: all answered, the connection stays open. (That the window then
    // reopens is the protocol's rule, tested with an injected clock in stream-protocol.test.ts.)
    const calm = await openSocket("/api/ws", "192.0.2.8");
    for (let i = 0; i < 10; i++) calm.ws.send(JSON.stringify({ op: "list", id: i }));
    await until(() => calm.messages.length === 10, { what: "ten answers" });
    expect(calm.ws.readyState).toBe(WebSocket.OPEN);
    calm.ws.close();
  });
});

describe("connection limit: 5 per client IP or API key", () => {
  it("a sixth connection of one IP is refused before the upgrade with 429 STREAM_LIMIT problem JSON and a request id", async () => {
    const ip = "192.0.2.20";
    const five = [];
    for (let i = 0; i < 5; i++) five.push(await openSocket("/api/ws", ip));
    const sixth = await upgrade("/api/ws", ip, { "X-Request-Id": "sixth-ws" });
    expect(sixth.status).toBe(429);
    expect(sixth.webSocket).toBeNull();
    expect(sixth.headers.get("Content-Type")).toBe("application/problem+json");
    expect(sixth.headers.get("X-Request-Id")).toBe("sixth-ws");
    expect(await sixth.json()).toMatchObject({ status: 429, code: "STREAM_LIMIT", requestId: "sixth-ws", detail: expect.stringContaining("5") });
    const other = await upgrade("/api/ws", "192.0.2.21", { "X-Request-Id": "other-ip" }); // another IP has its own five
    expect(other.status).toBe(101);
    expect(other.headers.get("X-Request-Id")).toBe("other-ip");
    for (const s of five) s.ws.close();
  });

  it("closing one of five frees its slot at once; a refused attempt takes none", async () => {
    const ip = "192.0.2.22";
    const five = [];
    for (let i = 0; i < 5; i++) five.push(await openSocket("/api/ws", ip));
    expect((await upgrade("/api/ws", ip)).status).toBe(429);
    five[0]!.ws.close(1000, "bye");
    await five[0]!.closed;
    expect(await runInDurableObject(shardStub(`ip:${ip}`), (_hub, state) => state.getWebSockets(`ip:${ip}`).length)).toBe(4);
    const replacement = await openSocket("/api/ws", ip);
    expect((await upgrade("/api/ws", ip)).status).toBe(429);
    for (const s of [...five.slice(1), replacement]) s.ws.close();
  });

  it("slots survive hibernation of the shard: a sixth is still refused, a freed one is reusable", async () => {
    const ip = "192.0.2.23";
    const sockets = [];
    for (let i = 0; i < 5; i++) sockets.push(await openSocket("/api/ws?streams=trades.BTCUSDT", ip));
    await evictDurableObject(shardStub(`ip:${ip}`), { webSockets: "hibernate" });
    expect((await upgrade("/api/ws", ip)).status).toBe(429);
    sockets[0]!.ws.close(1000, "bye");
    await sockets[0]!.closed;
    const reopened = await openSocket("/api/ws", ip);
    expect((await upgrade("/api/ws", ip)).status).toBe(429);
    // The hibernated sockets kept their subscriptions.
    await ingest(env, "*", { symbol: "BTCUSDT", trades: [{ id: "after-hibernation", price: "97000.00", quantity: "0.01000", side: "buy", time: Date.now() }] });
    for (const s of sockets.slice(1)) expect((await until(() => s.messages.find((m) => m.stream === "trades.BTCUSDT"))).data[0].id).toBe("after-hibernation");
    for (const s of [...sockets.slice(1), reopened]) s.ws.close();
  });

  it("a sixth connection of one API key is refused whatever IPs the five come from", async () => {
    const key = await newKey({ permissions: ["stream"] });
    const sockets = [];
    for (let i = 0; i < 5; i++) sockets.push(await openSocket(`/v1/ws?${await signedQuery(key)}`, `192.0.2.${30 + i}`));
    const sixth = await upgrade(`/v1/ws?${await signedQuery(key)}`, "192.0.2.40");
    expect(sixth.status).toBe(429);
    expect((await sixth.json()) as { code: string; detail: string }).toMatchObject({ code: "STREAM_LIMIT", detail: expect.stringContaining("API key") });
    // The key's five do not count against the IPs' public connections.
    expect((await upgrade("/api/ws", "192.0.2.30")).status).toBe(101);
    for (const s of sockets) s.ws.close();
  });
});

describe("/v1/ws authentication", () => {
  it("takes the signed headers or, for browsers, the query form over /v1/ws; it needs the stream permission", async () => {
    const streamer = await newKey({ permissions: ["stream"] });
    const viaQuery = await openSocket(`/v1/ws?${await signedQuery(streamer)}&streams=ticker.BTCUSDT`, "192.0.2.50");
    expect(await until(() => viaQuery.messages.find((m) => "result" in m))).toEqual({ id: null, result: { streams: ["ticker.BTCUSDT"] } });
    viaQuery.ws.close();

    const timestamp = Date.now();
    const target = "/v1/ws?streams=ticker.BTCUSDT";
    const headerSig = await sign(streamer.secret, signaturePayload({ timestamp, method: "GET", requestTarget: target, body: "" }));
    const viaHeaders = await upgrade(target, "192.0.2.51", {
      "X-API-KEY": streamer.id,
      "X-TIMESTAMP": String(timestamp),
      "X-SIGNATURE": headerSig,
      "X-Request-Id": "signed-ws",
    });
    expect(viaHeaders.status).toBe(101);
    // The upgrade is a limited response like any other: request id and the key's RateLimit headers.
    expect(viaHeaders.headers.get("X-Request-Id")).toBe("signed-ws");
    expect(viaHeaders.headers.get("RateLimit-Limit")).toBe("30");
    expect(Number(viaHeaders.headers.get("RateLimit-Remaining"))).toBeLessThan(30);
    viaHeaders.webSocket!.accept();
    viaHeaders.webSocket!.close();

    const reader = await newKey({ permissions: ["read"] });
    const refused = await upgrade(`/v1/ws?${await signedQuery(reader)}`, "192.0.2.52");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("PERMISSION_DENIED");

    const forged = await upgrade(`/v1/ws?apiKey=${streamer.id}&timestamp=${Date.now()}&signature=${"0".repeat(64)}`, "192.0.2.53");
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { code: string }).code).toBe("INVALID_SIGNATURE");
    const unsigned = await upgrade("/v1/ws", "192.0.2.54");
    expect(unsigned.status).toBe(401);
    expect(((await unsigned.json()) as { code: string }).code).toBe("MISSING_CREDENTIALS");
  });

  it("a plain GET of a WebSocket endpoint is a 400 problem", async () => {
    const response = await call("/api/ws");
    expect(response.status).toBe(400);
    expect(response.headers.get("Content-Type")).toBe("application/problem+json");
  });
});

describe("shards stop hearing from markets nobody there watches", () => {
  it("after the last subscriber leaves, the next update unsubscribes the shard from the market; a new subscriber registers again", async () => {
    const shardsOf = async () =>
      runInDurableObject(await hostOf("ETHBTC"), async (_instance, state) => {
        const row = state.storage.sql.exec<{ value: string }>(`SELECT value FROM ${tablePrefixOf("ETHBTC")}meta WHERE key = 'shards'`).toArray()[0];
        return JSON.parse(row?.value ?? "[]") as string[];
      });
    const first = await openSocket("/api/ws?streams=trades.ETHBTC", "192.0.2.60");
    await until(() => first.messages.find((m) => m.result));
    expect(await shardsOf()).toHaveLength(1);
    first.ws.close(1000, "done");
    await first.closed;
    await ingest(env, "*", { symbol: "ETHBTC", trades: [{ id: "release-1", price: "0.03500", quantity: "1.0000", side: "buy", time: Date.now() }] });
    expect(await until(async () => (await shardsOf()).length === 0 || undefined)).toBe(true);

    const second = await openSocket("/api/ws?streams=trades.ETHBTC", "192.0.2.60");
    await until(() => second.messages.find((m) => m.result));
    await ingest(env, "*", { symbol: "ETHBTC", trades: [{ id: "release-2", price: "0.03500", quantity: "1.0000", side: "buy", time: Date.now() }] });
    expect((await until(() => second.messages.find((m) => m.stream === "trades.ETHBTC"))).data[0].id).toBe("release-2");
    second.ws.close();
  });
});
