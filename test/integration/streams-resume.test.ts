import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type BookMessage, LocalBook } from "../../client/src/index";
import { streamHub } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import type { NativeSubscriptions } from "../../src/streams/native-subscriptions";
import type { StreamHub } from "../../src/streams/stream-hub";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, shardOfConnection, type TestSocket } from "./streams-support";

const bookOf = (socket: TestSocket, stream: string) => socket.messages.filter((m) => m.stream === stream).map((m) => m.data as BookMessage);
const restChecksum = async (symbol: string) => (await callJson<{ sequence: number; checksum: number }>(`/api/orderbook/${symbol}?depth=25`)).body;

/** A market of its own per test, moved by deltas at a level of its own. */
function feed(symbol: string, price: string) {
  let sequence = 0;
  return {
    get sequence() {
      return sequence;
    },
    snapshot: () => ingest(env, "*", { symbol, book: { type: "snapshot", sequence: ++sequence, bids: [[price, "1.0000"]], asks: [["99999.00", "1.0000"]] } }),
    delta: (quantity: string) => ingest(env, "*", { symbol, book: { type: "delta", sequence: ++sequence, bids: [[price, quantity]], asks: [] } }),
  };
}

describe("resuming a book after a lost connection (docs/streams.md#resuming)", () => {
  it("a quiet market: the new connection says resumed and sends no snapshot; the next delta continues the client's book", async () => {
    const ip = "198.51.100.90";
    const market = feed("SOLUSDT", "100.00");
    await market.snapshot();
    const first = await openSocket("/api/ws?streams=book.SOLUSDT", ip);
    const book = new LocalBook();
    await until(() => bookOf(first, "book.SOLUSDT").length >= 1, { what: "the snapshot" });
    for (const m of bookOf(first, "book.SOLUSDT")) book.apply(m);
    first.ws.close();
    book.suspend();

    const again = await openSocket(`/api/ws?streams=book.SOLUSDT&resume=book.SOLUSDT:${book.sequence}`, ip);
    await until(() => again.messages.length > 0, { what: "the connect's ack" });
    expect(again.messages[0], "the connect's ack names the resumed book").toEqual({
      id: null,
      result: { streams: ["book.SOLUSDT"], resumed: ["book.SOLUSDT"] },
    });
    expect(book.resume(book.sequence)).toBe(true);
    await market.delta("2.0000");
    await until(() => bookOf(again, "book.SOLUSDT").length >= 1, { what: "the next delta" });
    const messages = bookOf(again, "book.SOLUSDT");
    expect(
      messages.map((m) => m.type),
      "no snapshot",
    ).toEqual(["delta"]);
    for (const m of messages) expect(book.apply(m)).toBe("applied");
    expect(book.checksum()).toBe((await restChecksum("SOLUSDT")).checksum);
    again.ws.close();
  });

  it("a moving market: the shard sends the deltas the client missed, unbroken, instead of a snapshot; a sequence it no longer holds gets a snapshot", async () => {
    const ip = "198.51.100.91";
    const market = feed("XRPUSDT", "0.5000");
    await market.snapshot();
    // Another subscriber on the same shard keeps the market registered while the client is away.
    const stays = await openSocket("/api/ws?streams=book.XRPUSDT", ip);
    const client = await openSocket("/api/ws?streams=book.XRPUSDT", ip);
    const book = new LocalBook();
    await until(() => bookOf(client, "book.XRPUSDT").length >= 1, { what: "the snapshot" });
    for (const m of bookOf(client, "book.XRPUSDT")) book.apply(m);
    client.ws.close();
    book.suspend();
    const away = book.sequence;
    for (const quantity of ["2.0000", "3.0000", "4.0000"]) {
      await market.delta(quantity);
      await until(() => bookOf(stays, "book.XRPUSDT").at(-1)?.sequence === market.sequence, { what: `delta ${market.sequence} on the shard` });
    }

    const again = await openSocket(`/api/ws?streams=book.XRPUSDT&resume=book.XRPUSDT:${away}`, ip);
    await until(() => again.messages.length > 0, { what: "the connect's ack" });
    expect(again.messages[0]).toEqual({ id: null, result: { streams: ["book.XRPUSDT"], resumed: ["book.XRPUSDT"] } });
    await until(() => bookOf(again, "book.XRPUSDT").at(-1)?.sequence === market.sequence, { what: "the missed deltas" });
    const missed = bookOf(again, "book.XRPUSDT");
    expect(missed.every((m) => m.type === "delta")).toBe(true);
    expect(missed[0]!.firstSequence, "continues the client's book").toBe(away + 1);
    for (const m of missed) expect(book.apply(m), `delta ${m.firstSequence}…${m.sequence}`).toBe("applied");
    const rest = await restChecksum("XRPUSDT");
    expect([book.sequence, book.checksum()]).toEqual([rest.sequence, rest.checksum]);

    const tooOld = await openSocket(`/api/ws?streams=book.XRPUSDT&resume=book.XRPUSDT:${away - 1}`, ip);
    await until(() => tooOld.messages.length > 0, { what: "the connect's ack" });
    expect(tooOld.messages[0]).toEqual({ id: null, result: { streams: ["book.XRPUSDT"] } });
    await until(() => bookOf(tooOld, "book.XRPUSDT").length >= 1, { what: "the snapshot" });
    expect(bookOf(tooOld, "book.XRPUSDT")[0]!.type).toBe("snapshot");
    for (const s of [stays, again, tooOld]) s.ws.close();
  });

  it("after the shard restarts (its sockets closed, its copy gone), a client of a market that did not move resumes once the base comes", async () => {
    const ip = "198.51.100.92";
    const market = feed("BTCUSDC", "90000.00");
    await market.snapshot();
    const first = await openSocket("/api/ws?streams=book.BTCUSDC", ip);
    await until(() => bookOf(first, "book.BTCUSDC").length >= 1, { what: "the snapshot" });
    const sequence = bookOf(first, "book.BTCUSDC")[0]!.sequence;
    await evictDurableObject(env.STREAM_HUB.getByName(await shardOfConnection(`ip:${ip}`, ["BTCUSDC"])), { webSockets: "close" });
    await first.closed;

    const again = await openSocket(`/api/ws?streams=book.BTCUSDC&resume=book.BTCUSDC:${sequence}`, ip);
    await until(() => again.messages.length > 0, { what: "the connect's ack" });
    expect(again.messages[0]).toEqual({ id: null, result: { streams: ["book.BTCUSDC"], resumed: ["book.BTCUSDC"] } });
    expect(bookOf(again, "book.BTCUSDC"), "no snapshot").toEqual([]);
    again.ws.close();
  });

  it("a resume with the status stream: the status is asked before the connection subscribes, so no delta can overtake the resumed messages (fails before)", async () => {
    const ip = "198.51.100.93";
    const market = feed("ETHBTC", "0.03500");
    await market.snapshot();
    const socket = await openSocket("/api/ws", ip);
    const shard = await shardOfConnection(`ip:${ip}`);
    const seen = await runInDurableObject(streamHub(env, shard), async (instance: StreamHub) => {
      const inside = instance as unknown as {
        ctx: DurableObjectState;
        duties: { currentStatus: () => Promise<unknown> };
        natives: NativeSubscriptions;
      };
      const ws = inside.ctx.getWebSockets().find((w) => w.readyState === WebSocket.OPEN)!;
      const asked = inside.duties.currentStatus.bind(inside.duties);
      let subscribedWhileAsking: boolean | undefined;
      // While the status is asked, a delta could reach every subscriber of the book: is this one of them yet?
      inside.duties.currentStatus = async () => {
        subscribedWhileAsking = inside.natives.holders("book.ETHBTC")?.has(ws) ?? false;
        return asked();
      };
      await inside.natives.subscribe(ws, 7, ["status", "book.ETHBTC"]);
      return subscribedWhileAsking;
    });
    expect(seen, "the connection was a book subscriber while the status was asked").toBe(false);
    await until(() => socket.messages.some((m) => m.stream === "status"), { what: "the status" });
    socket.ws.close();
  });
});
