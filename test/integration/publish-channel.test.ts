import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { principalOfKey } from "../../src/access/keys";
import { accessGuard, publishChannel } from "../../src/core/object-ids";
import { MAX_BATCHES_PER_MESSAGE } from "../../src/publish/protocol";
import type { PublishChannel } from "../../src/publish/publish-channel-object";
import { newKey, newPublishKey, type TestKey } from "../support/accounts";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket, publishPath, type TestSocket, upgrade } from "./streams-support";

async function channel(key: TestKey, ip = "203.0.130.1"): Promise<TestSocket> {
  return openSocket(await publishPath(key), ip);
}

const answerOf = (socket: TestSocket, id: unknown) => until(() => socket.messages.find((m) => m.id === id), { what: `the answer to ${String(id)}` });

describe("the publisher channel, GET /v1/publish (docs/publishing.md#the-publisher-channel)", () => {
  it("answers each batch with the ingest result or its problem, with the semantics of POST /v1/ingest", async () => {
    const key = await newPublishKey();
    const socket = await channel(key);
    const snapshot = { type: "snapshot", sequence: 1, bids: [["0.6000", "10.0"]], asks: [["0.6100", "10.0"]] };
    socket.ws.send(
      JSON.stringify({ id: 1, symbol: "XRPUSDT", book: snapshot, trades: [{ id: "p-1", price: "0.6050", quantity: "5.0", side: "buy", time: Date.now() }] }),
    );
    expect(await answerOf(socket, 1)).toEqual({ id: 1, result: { symbol: "XRPUSDT", acceptedTrades: 1, duplicateTrades: 0, sequence: 1, book: "applied" } });
    // An exact resend: nothing changes, and it says so.
    socket.ws.send(
      JSON.stringify({
        id: "again",
        symbol: "XRPUSDT",
        book: snapshot,
        trades: [{ id: "p-1", price: "0.6050", quantity: "5.0", side: "buy", time: Date.now() }],
      }),
    );
    expect((await answerOf(socket, "again")).result).toMatchObject({ book: "duplicate", duplicateTrades: 1, acceptedTrades: 0 });
    // A gap inside a batch: the problem, nothing applied.
    socket.ws.send(
      JSON.stringify({
        id: 3,
        symbol: "XRPUSDT",
        book: [
          { type: "delta", sequence: 2, bids: [], asks: [] },
          { type: "delta", sequence: 4, bids: [], asks: [] },
        ],
      }),
    );
    expect((await answerOf(socket, 3)).error).toMatchObject({ status: 409, code: "SEQUENCE_GAP", bookIndex: 1 });
    expect((await callJson("/api/orderbook/XRPUSDT")).body.sequence).toBe(1);
    // Rules, unknown markets, malformed messages.
    socket.ws.send(JSON.stringify({ id: 4, symbol: "XRPUSDT", trades: [{ id: "p-2", price: "0.60501", quantity: "5.0", side: "buy", time: Date.now() }] }));
    expect((await answerOf(socket, 4)).error).toMatchObject({ status: 400, code: "VALIDATION_FAILED" });
    socket.ws.send(JSON.stringify({ id: 5, symbol: "NOPEUSDT", trades: [] }));
    expect((await answerOf(socket, 5)).error).toMatchObject({ status: 404, code: "UNKNOWN_SYMBOL" });
    socket.ws.send("not json");
    expect(await until(() => socket.messages.find((m) => m.id === null && m.error))).toMatchObject({ error: { code: "VALIDATION_FAILED" } });
    socket.ws.send(JSON.stringify({ id: 6, symbol: "XRPUSDT", book: { type: "delta" } }));
    expect((await answerOf(socket, 6)).error.errors.map((e: { path: string }) => e.path)).toContain("book");
    socket.ws.close();
  });

  it("keeps one market's batches in the order sent, and carries many markets on one connection", async () => {
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.2");
    const markets = ["BTCUSDT", "ETHUSDT", "SOLUSDT"] as const;
    const prices = { BTCUSDT: ["97000.00", "0.00100"], ETHUSDT: ["3400.00", "0.0100"], SOLUSDT: ["150.000", "1.00"] } as const;
    const ids: string[] = [];
    for (const market of markets) {
      for (let n = 0; n < 20; n++) {
        const [price, quantity] = prices[market];
        const id = `${market}-${n}`;
        ids.push(id);
        socket.ws.send(JSON.stringify({ id, symbol: market, trades: [{ id: `order-${id}`, price, quantity, side: "buy", time: Date.now() }] }));
      }
    }
    await until(() => ids.every((id) => socket.messages.some((m) => m.id === id)), { what: "every answer" });
    expect(socket.messages.filter((m) => m.error)).toEqual([]);
    for (const market of markets) {
      const page = (await callJson(`/api/trades/${market}?limit=1000`)).body as { id: string; tradeId: number }[];
      const mine = page.filter((t) => t.id.startsWith(`order-${market}`)).sort((a, b) => a.tradeId - b.tradeId);
      expect(mine.map((t) => t.id)).toEqual(Array.from({ length: 20 }, (_, n) => `order-${market}-${n}`));
    }
    socket.ws.close();
  });

  it("takes an array of batches in one message, each answered on its own as if sent alone, in order (fails before: the array was refused)", async () => {
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.9");
    const trade = (market: string, n: number) => {
      const [price, quantity] = market === "BTCUSDT" ? ["97000.00", "0.00100"] : ["3400.00", "0.0100"];
      return { id: `many-${market}-${n}`, price, quantity, side: "buy", time: Date.now() };
    };
    const batches = [
      { id: "m1", symbol: "BTCUSDT", trades: [trade("BTCUSDT", 1)] },
      { id: "m2", symbol: "ETHUSDT", trades: [trade("ETHUSDT", 1)] },
      { id: "m3", symbol: "BTCUSDT", trades: [{ ...trade("BTCUSDT", 2), price: "97000.001" }] }, // off the tick: refused alone
      { id: "m4", symbol: "BTCUSDT", trades: [trade("BTCUSDT", 3)] },
      { id: "m5", symbol: "ETHUSDT", book: { type: "delta" } }, // malformed: its own error, with its id
    ];
    socket.ws.send(JSON.stringify(batches));
    const answers = await Promise.all(batches.map((b) => answerOf(socket, b.id)));
    expect(
      answers.map((a) => a.result?.acceptedTrades ?? a.error.code),
      "each batch's answer",
    ).toEqual([1, 1, "VALIDATION_FAILED", 1, "VALIDATION_FAILED"]);
    const btc = (await callJson<{ id: string; tradeId: number }[]>("/api/trades/BTCUSDT?limit=1000")).body
      .filter((t) => t.id.startsWith("many-"))
      .sort((a, b) => a.tradeId - b.tradeId);
    expect(
      btc.map((t) => t.id),
      "one market's batches of the message, in the message's order",
    ).toEqual(["many-BTCUSDT-1", "many-BTCUSDT-3"]);
    // An empty array, or one longer than a connection's window, is no batch: one error without an id.
    socket.ws.send("[]");
    socket.ws.send(JSON.stringify(Array.from({ length: MAX_BATCHES_PER_MESSAGE + 1 }, (_, n) => ({ id: `over-${n}`, symbol: "BTCUSDT", trades: [] }))));
    await until(() => socket.messages.filter((m) => m.id === null && m.error).length === 2, { what: "two refusals" });
    expect(
      socket.messages.some((m) => typeof m.id === "string" && m.id.startsWith("over-")),
      "no batch of the long array taken",
    ).toBe(false);
    socket.ws.close();
  });

  it("refuses a key without publish, a bad signature, and a request that is not an upgrade", async () => {
    const reader = await newKey({ permissions: ["read"] });
    const denied = await upgrade(await publishPath(reader), "203.0.130.4");
    expect([denied.status, ((await denied.json()) as { code: string }).code]).toEqual([403, "PERMISSION_DENIED"]);
    const publisher = await newPublishKey();
    const forged = (await publishPath(publisher)).replace(/signature=[0-9a-f]{4}/, "signature=0000");
    expect((await upgrade(forged, "203.0.130.5")).status).toBe(401);
    expect((await call(await publishPath(publisher), { ip: "203.0.130.6" })).status).toBe(400);
  });

  it("a revoked key's connections close at once when the operator revokes it (policy violation, with the reason)", async () => {
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.8");
    expect((await call(`/admin/publish-keys/${key.id}`, { method: "DELETE", headers: { Authorization: "Bearer test-admin-token" } })).status).toBe(204);
    expect(await socket.closed).toEqual({ code: 1008, reason: "the publishing key was revoked" });
  });

  it("a revocation holds for every batch still queued: at most the batch in flight is applied after the DELETE is answered", async () => {
    // Fails before the fix: each batch held the key's standing as checked when it arrived, so all
    // 60 queued batches of 1,000 trades were applied after the 204 and the 1008.
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.9");
    const stub = publishChannel(env, principalOfKey(key.id));
    type Inside = { tail: Promise<void>; window: { pendingBatches: number } };
    const tradesNow = async () => ((await callJson("/api/ticker/ETHUSDT")).body as { tradeCount24h: number }).tradeCount24h;
    const before = await tradesNow();
    // The channel's turns are held shut, so the batches queue behind them as behind a slow check.
    let open!: () => void;
    await runInDurableObject(stub, async (instance: PublishChannel) => {
      (instance as unknown as Inside).tail = new Promise<void>((resolve) => (open = resolve));
    });
    const batches = 60;
    const time = Date.now();
    for (let n = 0; n < batches; n++) {
      const trades = Array.from({ length: 1000 }, (_, t) => ({ id: `rv-${n}-${t}`, price: "3400.00", quantity: "0.0100", side: "buy", time }));
      socket.ws.send(JSON.stringify({ id: n, symbol: "ETHUSDT", trades }));
    }
    await until(() => runInDurableObject(stub, async (instance: PublishChannel) => (instance as unknown as Inside).window.pendingBatches === batches), {
      what: "all 60 batches queued",
    });
    const revoked = await call(`/admin/publish-keys/${key.id}`, { method: "DELETE", headers: { Authorization: "Bearer test-admin-token" } });
    expect(revoked.status).toBe(204);
    await runInDurableObject(stub, async (instance: PublishChannel) => {
      open();
      await (instance as unknown as Inside).tail;
    });
    await until(() => runInDurableObject(stub, async (instance: PublishChannel) => (instance as unknown as Inside).window.pendingBatches === 0), {
      what: "every queued batch answered",
    });
    expect((await tradesNow()) - before, "trades applied after the DELETE was answered").toBeLessThanOrEqual(1000);
    expect(await socket.closed).toEqual({ code: 1008, reason: "the publishing key was revoked" });
  });

  it("an operator's change is not answered by a check that began before it (the guard may have answered that one first)", async () => {
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.10");
    const principal = principalOfKey(key.id);
    await runInDurableObject(publishChannel(env, principal), async (instance: PublishChannel) => {
      const inside = instance as unknown as { checking: Promise<unknown> | undefined; grant: unknown };
      // A check in flight whose guard answered "active" before the revocation below.
      const status = await accessGuard(env, principal).keyStatus();
      let answer!: () => void;
      inside.grant = undefined;
      inside.checking = new Promise((resolve) => {
        answer = () => resolve({ status, checkedAt: Date.now() });
      });
      await accessGuard(env, principal).revokeKey();
      const recheck = instance.recheck();
      answer();
      await recheck;
      const standing = (
        await (instance as unknown as { currentGrant(now: number): Promise<{ status: { revokedAt: number | null } }> }).currentGrant(Date.now())
      ).status;
      expect(standing.revokedAt, "the standing after recheck() is the guard's answer after the revocation").not.toBeNull();
    });
    expect(await socket.closed).toEqual({ code: 1008, reason: "the publishing key was revoked" });
  });

  it("a message whose turn cannot check the key is refused whole (UNAVAILABLE, nothing applied), and the next message's turn still comes", async () => {
    const key = await newPublishKey();
    const socket = await channel(key, "203.0.130.11");
    const stub = publishChannel(env, principalOfKey(key.id));
    type Inside = { grant: unknown; checking: Promise<unknown> | undefined };
    // The guard cannot answer this check (as when it is unreachable): the turn fails closed.
    await runInDurableObject(stub, async (instance: PublishChannel) => {
      const inside = instance as unknown as Inside;
      inside.grant = undefined;
      inside.checking = Promise.reject(new Error("the guard did not answer"));
      inside.checking.catch(() => {});
    });
    const batch = (id: string, symbol: string, price: string, quantity: string) => ({
      id,
      symbol,
      trades: [{ id: `turn-${id}`, price, quantity, side: "buy", time: Date.now() }],
    });
    socket.ws.send(JSON.stringify([batch("a1", "BTCUSDT", "97000.00", "0.00100"), batch("a2", "ETHUSDT", "3400.00", "0.0100")]));
    for (const id of ["a1", "a2"]) expect((await answerOf(socket, id)).error, `batch ${id}`).toMatchObject({ code: "UNAVAILABLE" });
    await runInDurableObject(stub, async (instance: PublishChannel) => {
      (instance as unknown as Inside).checking = undefined;
    });
    socket.ws.send(JSON.stringify([batch("b1", "BTCUSDT", "97000.00", "0.00100"), batch("b2", "ETHUSDT", "3400.00", "0.0100")]));
    for (const id of ["b1", "b2"]) expect((await answerOf(socket, id)).result, `batch ${id}`).toMatchObject({ acceptedTrades: 1 });
    for (const symbol of ["BTCUSDT", "ETHUSDT"]) {
      const mine = ((await callJson(`/api/trades/${symbol}?limit=1000`)).body as { id: string }[]).filter((t) => t.id.startsWith("turn-")).map((t) => t.id);
      expect(mine, `${symbol}'s trades of this test`).toEqual([symbol === "BTCUSDT" ? "turn-b1" : "turn-b2"]);
    }
    socket.ws.close();
  });

  it("a dropped connection loses nothing acknowledged: what was answered is stored, a resend of the rest applies once", async () => {
    const key = await newPublishKey();
    const first = await channel(key, "203.0.130.7");
    for (let n = 0; n < 10; n++)
      first.ws.send(
        JSON.stringify({ id: n, symbol: "SOLBTC", trades: [{ id: `drop-${n}`, price: "0.0015000", quantity: "1.00", side: "sell", time: Date.now() }] }),
      );
    await until(() => first.messages.some((m) => m.id === 4));
    first.ws.close();
    const acknowledged = first.messages.filter((m) => m.result).map((m) => m.id as number);
    const second = await channel(key, "203.0.130.7");
    for (let n = 0; n < 10; n++)
      second.ws.send(
        JSON.stringify({ id: n, symbol: "SOLBTC", trades: [{ id: `drop-${n}`, price: "0.0015000", quantity: "1.00", side: "sell", time: Date.now() }] }),
      );
    await until(() => second.messages.filter((m) => typeof m.id === "number").length === 10);
    for (const n of acknowledged) expect(second.messages.find((m) => m.id === n).result.duplicateTrades, `batch ${n} was stored before the drop`).toBe(1);
    const stored = ((await callJson("/api/trades/SOLBTC?limit=1000")).body as { id: string }[]).filter((t) => t.id.startsWith("drop-"));
    expect(stored).toHaveLength(10);
    second.ws.close();
  });
});
