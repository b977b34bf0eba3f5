import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { askInner, takeInner } from "../../src/core/inner-answers";
import { accessGuard } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { listThroughAdmin, registry } from "../support/registry";
import { openSocket, type TestSocket, upgrade } from "./streams-support";

/** Sends a request and waits for the answer with its id. */
async function ask(socket: TestSocket, id: number | string, method: string, params?: Record<string, unknown>) {
  socket.ws.send(JSON.stringify({ id, method, ...(params ? { params } : {}) }));
  return until(() => socket.messages.find((m) => m.id === id), { what: `the answer to ${method} (${id})` });
}

beforeAll(async () => {
  const time = Date.now() - 1000;
  await ingest(env, "*", {
    symbol: "ETHUSDT",
    trades: [
      { id: "wsapi-1", price: "3000.00", quantity: "0.5000", side: "buy", time: time - 10 },
      { id: "wsapi-2", price: "3001.00", quantity: "0.2500", side: "sell", time },
    ],
    book: {
      type: "snapshot",
      sequence: 7,
      bids: [
        ["2999.00", "1.0000"],
        ["2998.00", "2.0000"],
      ],
      asks: [["3002.00", "1.5000"]],
    },
  });
});

describe("Binance's WebSocket API (docs/binance.md#websocket-api)", () => {
  it("answers every public market-data method with the REST dialect's answer, in Binance's envelope", async () => {
    const socket = await openSocket("/binance/ws-api/v3", "198.18.70.1");
    const cases: [string, Record<string, unknown> | undefined, string][] = [
      ["ping", undefined, "ping"],
      ["depth", { symbol: "ETHUSDT", limit: 5 }, "depth?symbol=ETHUSDT&limit=5"],
      ["trades.recent", { symbol: "ETHUSDT", limit: 10 }, "trades?symbol=ETHUSDT&limit=10"],
      ["trades.historical", { symbol: "ETHUSDT", fromId: 1 }, "historicalTrades?symbol=ETHUSDT&fromId=1"],
      ["trades.aggregate", { symbol: "ETHUSDT" }, "aggTrades?symbol=ETHUSDT"],
      ["klines", { symbol: "ETHUSDT", interval: "1m", limit: 3 }, "klines?symbol=ETHUSDT&interval=1m&limit=3"],
      ["uiKlines", { symbol: "ETHUSDT", interval: "1h" }, "uiKlines?symbol=ETHUSDT&interval=1h"],
      ["ticker.price", { symbols: ["ETHUSDT", "BTCUSDT"] }, `ticker/price?symbols=${encodeURIComponent('["ETHUSDT","BTCUSDT"]')}`],
      ["ticker.book", { symbol: "ETHUSDT" }, "ticker/bookTicker?symbol=ETHUSDT"],
    ];
    let id = 0;
    for (const [method, params, rest] of cases) {
      const answer = await ask(socket, ++id, method, params);
      const expected = await callJson(`/binance/api/v3/${rest}`, { ip: `198.18.71.${id}` });
      expect(expected.status, `REST ${rest}`).toBe(200);
      expect(answer, method).toMatchObject({ id, status: 200, result: expected.body });
      expect(answer.rateLimits, `${method}: the address's limit`).toEqual([
        { rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit: 10, count: expect.any(Number) },
      ]);
    }
    socket.ws.close();
  });

  it("hands the route's 200 text to a request the isolate asks itself, its body empty (fails before: each answer's text was written into a body the runtime held until a full collection, ~80 KB a deep book)", async () => {
    const path = "/binance/api/v3/depth?symbol=ETHUSDT&limit=5";
    const request = new Request(`https://market-data.test${path}`, { headers: { "CF-Connecting-IP": "198.18.72.1" } });
    askInner(request);
    const response = await createApp().fetch(request, env, createExecutionContext());
    expect(response.status, "the inner request's status").toBe(200);
    expect(response.body, "the inner request's body").toBeNull();
    const handed = takeInner(request);
    expect(handed, "the text handed over").toBeDefined();
    const rest = await callJson(path, { ip: "198.18.72.2" });
    expect(JSON.parse(handed!), "the same answer as the REST route's").toEqual(rest.body);
    expect(takeInner(request), "taken once").toBeUndefined();
  });

  it("answers the time-dependent methods in the same shapes: time, exchangeInfo, avgPrice, ticker.24hr, ticker.tradingDay, ticker", async () => {
    const socket = await openSocket("/binance/ws-api/v3?returnRateLimits=false", "198.18.70.2");
    const time = await ask(socket, "t", "v3/time");
    expect(time).toEqual({ id: "t", status: 200, result: { serverTime: expect.any(Number) } });
    const info = await ask(socket, "i", "exchangeInfo", { symbols: ["BTCUSDT", "ETHUSDT"] });
    expect(info.result.symbols.map((s: { symbol: string }) => s.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    expect((await ask(socket, "a", "avgPrice", { symbol: "ETHUSDT" })).result).toMatchObject({ mins: 5, price: expect.any(String) });
    const ticker = await ask(socket, "h", "ticker.24hr", { symbol: "ETHUSDT" });
    expect(ticker.result).toMatchObject({ symbol: "ETHUSDT", lastPrice: "3001.00", count: 2 });
    expect((await ask(socket, "d", "ticker.tradingDay", { symbol: "ETHUSDT" })).result).toMatchObject({ symbol: "ETHUSDT", count: 2 });
    expect((await ask(socket, "w", "ticker", { symbol: "ETHUSDT", windowSize: "1h" })).result).toMatchObject({ symbol: "ETHUSDT", count: 2 });
    expect(ticker.rateLimits, "?returnRateLimits=false leaves them out").toBeUndefined();
    expect((await ask(socket, "r", "time", { returnRateLimits: true })).rateLimits, "unless a request asks").toHaveLength(1);
    socket.ws.close();
  });

  it("answers Binance's errors, never a 5xx: an unknown or private method -1020, an unknown symbol -1121, a malformed frame -1100", async () => {
    const socket = await openSocket("/binance/ws-api/v3", "198.18.70.3");
    expect(await ask(socket, 1, "order.place", { symbol: "ETHUSDT" })).toMatchObject({ id: 1, status: 400, error: { code: -1020 } });
    expect(await ask(socket, 2, "depth", { symbol: "NOPEUSDT" })).toMatchObject({ id: 2, status: 400, error: { code: -1121, msg: "Invalid symbol." } });
    expect(await ask(socket, 3, "depth", {})).toMatchObject({ id: 3, status: 400, error: { code: -1102 } });
    expect(await ask(socket, 4, "klines", { symbol: "ETHUSDT", interval: "7m" })).toMatchObject({ id: 4, status: 400, error: { code: -1120 } });
    expect(await ask(socket, 5, "depth", { symbol: { nested: true } })).toMatchObject({ id: 5, status: 400, error: { code: -1100 } });
    expect(await ask(socket, 6, "depth", { symbol: "ETHUSDT", limt: 5 }), "a parameter depth does not read").toMatchObject({
      id: 6,
      status: 400,
      error: { code: -1104, msg: "Not all sent parameters were read; read '1' parameter(s) but was sent '2'." },
    });
    expect(await ask(socket, 7, "ticker.price", { symbols: ["ETHUSDT", "ETHUSDT"] }), "a symbol named twice").toMatchObject({
      id: 7,
      error: { code: -1101 },
    });
    socket.ws.send("not json");
    const malformed = await until(() => socket.messages.find((m) => m.id === null), { what: "the answer to a frame that is not JSON" });
    expect(malformed).toMatchObject({ status: 400, error: { code: -1100 } });
    expect(malformed.rateLimits, "a frame not read still reports the address's limit").toEqual([
      { rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit: 10, count: expect.any(Number) },
    ]);
    socket.ws.close();
  });

  it("ticker takes 200 symbols, as Binance's WebSocket API (its REST endpoint 100)", async () => {
    const assets = Array.from({ length: 150 }, (_, i) => ({ asset: `WT${i}`, name: `WT ${i}`, decimals: 8 }));
    await listThroughAdmin("/admin/assets", assets);
    const rules = { tickSize: "0.01", stepSize: "0.001", minQty: "0.001", maxQty: "1000000", minNotional: "1" };
    await listThroughAdmin(
      "/admin/markets",
      assets.map((a) => ({ base: a.asset, quote: "USDT", ...rules })),
    );
    const symbols = assets.map((a) => `${a.asset}USDT`);
    await until(async () => ((await registry()).bySymbol.has(symbols[149]!) ? true : undefined), { what: "the listing" });
    const socket = await openSocket("/binance/ws-api/v3", "198.18.70.11");
    const answer = await ask(socket, 1, "ticker", { symbols, windowSize: "1h" });
    expect([answer.status, answer.result?.length], JSON.stringify(answer.error)).toEqual([200, 150]);
    socket.ws.close();
    const rest = await callJson(`/binance/api/v3/ticker?windowSize=1h&symbols=${encodeURIComponent(JSON.stringify(symbols))}`);
    expect([rest.status, rest.body.code], "REST's ticker, 150 symbols").toEqual([400, -1130]);
  }, 60_000);

  it("counts every frame against the connection's 10 a second, valid or not, and refuses a binary or oversized one on arrival (fails before: frames that were not requests were answered without limit)", async () => {
    const socket = await openSocket("/binance/ws-api/v3", "198.18.70.9");
    socket.ws.send(new Uint8Array([1, 2, 3]));
    socket.ws.send(JSON.stringify({ id: "big", method: "ping", params: { pad: "x".repeat(20_000) } }));
    for (let i = 0; i < 13; i++) socket.ws.send("not json");
    await until(() => (socket.messages.length >= 15 ? socket.messages : undefined), { what: "15 answers" });
    const codes = socket.messages.map((m) => m.error?.code);
    expect(codes.slice(0, 2), "the binary and the oversized frame").toEqual([-1100, -1100]);
    expect(codes.filter((c) => c === -1003).length, "frames past 10 in a second").toBe(5);
    expect(codes.filter((c) => c === -1100).length, "frames answered as malformed").toBe(10);
    socket.ws.close();
  });

  it("counts each request once against the address's 10 a second: the rest are 429 -1003", async () => {
    const socket = await openSocket("/binance/ws-api/v3", "198.18.70.4");
    for (let i = 0; i < 14; i++) socket.ws.send(JSON.stringify({ id: i, method: "ping" }));
    await until(() => (socket.messages.length >= 14 ? socket.messages : undefined), { what: "14 answers" });
    const statuses = socket.messages.map((m) => m.status);
    // The upgrade was one of the ten.
    expect(statuses.filter((s) => s === 200).length, "requests answered within the limit").toBe(9);
    expect(statuses.filter((s) => s === 429).length, "refused").toBe(5);
    const refused = socket.messages.find((m) => m.status === 429);
    expect(refused.error.code).toBe(-1003);
    expect(refused.error.data.retryAfter, "Binance's retryAfter: when to ask again (Unix ms)").toBeGreaterThan(refused.error.data.serverTime);
    expect(
      socket.messages.map((m) => m.id),
      "answers in the order asked",
    ).toEqual([...Array(14).keys()]);
    socket.ws.close();
  });

  it("bounds an address's answer bytes a minute over all its connections, not each connection's (fails before: a second connection of the address had a window of its own)", async () => {
    const most = Number(env.WS_API_ANSWER_BYTES);
    // A deep book, so a few answers spend the window whatever else the file listed.
    const levels = (base: number, step: number) => Array.from({ length: 500 }, (_, i): [string, string] => [(base + step * i).toFixed(2), "1.00000"]);
    await ingest(env, "*", { symbol: "BTCUSDT", book: { type: "snapshot", sequence: 1, bids: levels(50_000, -1), asks: levels(60_000, 1) } });
    const [first, second] = [await openSocket("/binance/ws-api/v3", "198.18.70.12"), await openSocket("/binance/ws-api/v3", "198.18.70.12")];
    // The first connection asks until the address's bytes are spent (asking again after a refusal of the rate).
    let spent: { status: number; error?: { code: number; msg: string } } | undefined;
    for (let id = 0; id < 200 && !spent; id++) {
      const answer = await ask(first, `fill-${id}`, "depth", { symbol: "BTCUSDT", limit: 1000 });
      if (answer.status === 429 && /bytes/.test(answer.error.msg)) spent = answer;
      else if (answer.status === 429)
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, answer.error.data.retryAfter - answer.error.data.serverTime)));
      else expect(answer.status, "the deep book").toBe(200);
    }
    expect(spent?.error?.code, `the first connection's answers past ${most} bytes`).toBe(-1003);
    // The second connection of the same address: the same window, spent.
    const deep = () => ask(second, "other", "depth", { symbol: "BTCUSDT", limit: 1000 });
    let other = await deep();
    while (other.status === 429 && !/bytes/.test(other.error.msg)) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, other.error.data.retryAfter - other.error.data.serverTime)));
      second.messages.length = 0;
      other = await deep();
    }
    expect([other.status, other.error?.code, /bytes/.test(other.error?.msg ?? "")], "the second connection's first deep answer").toEqual([429, -1003, true]);
    // Another address is not touched.
    const elsewhere = await openSocket("/binance/ws-api/v3", "198.18.77.1");
    const away = await ask(elsewhere, "elsewhere", "depth", { symbol: "BTCUSDT", limit: 1000 });
    expect([away.status, away.error?.msg], "another address").toEqual([200, undefined]);
    for (const socket of [first, second, elsewhere]) socket.ws.close();
  });

  it("is one of the address's five connections with its streams; a closed one gives its place back", async () => {
    const ip = "198.18.70.5";
    const open = [await openSocket("/binance/ws-api/v3", ip)];
    for (let i = 0; i < 4; i++) open.push(await openSocket(i % 2 ? "/binance/ws/ethusdt@trade" : "/binance/ws-api/v3", ip));
    const sixth = await upgrade("/binance/ws-api/v3", ip);
    expect(sixth.status, "a sixth connection").toBe(429);
    expect(((await sixth.json()) as { code: number }).code).toBe(-1003);
    open[0]!.ws.close();
    await until(async () => ((await accessGuard(env, `ip:${ip}`).connectionsHeld()).length === 4 ? true : undefined), { what: "the lease returned" });
    const again = await openSocket("/binance/ws-api/v3", ip);
    expect((await ask(again, 1, "ping")).status).toBe(200);
    for (const socket of [...open.slice(1), again]) socket.ws.close();
  });

  it("lives as Binance's: told serverShutdown once before a maintenance, closed 1000 at its end of life (24 h; here the setting's 1.5 s)", async () => {
    const app = createApp();
    const lifetime = { ...env, WS_API_MAX_AGE_MS: "1500", WS_API_STATUS_EVERY_MS: "50", VENUE_READ_MAX_AGE_MS: "0" };
    const response = await app.request(
      "/binance/ws-api/v3",
      { headers: { Upgrade: "websocket", "CF-Connecting-IP": "198.18.70.12" } },
      lifetime,
      createExecutionContext(),
    );
    expect(response.status).toBe(101);
    const ws = response.webSocket!;
    ws.accept();
    const frames: any[] = [];
    ws.addEventListener("message", (event) => frames.push(JSON.parse((event.data as string) || "null")));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
    const startsAt = Date.now() + 30_000;
    const made = await callJson("/admin/announcements", {
      method: "POST",
      headers: { Authorization: "Bearer test-admin-token", "Content-Type": "application/json" },
      body: JSON.stringify({ kind: "maintenance", title: "WebSocket API maintenance", startsAt, endsAt: startsAt + 60_000 }),
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const notice = await until(() => frames.find((f) => f.event?.e === "serverShutdown"), { what: "serverShutdown on the WebSocket API" });
    expect(notice).toEqual({ event: { e: "serverShutdown", E: expect.any(Number) } });
    expect(await closed, "the end of the connection's life").toEqual({ code: 1000, reason: "a WebSocket API connection lasts at most 24 hours; reconnect" });
    expect(frames.filter((f) => f.event?.e === "serverShutdown").length, "told once per maintenance").toBe(1);
    await call(`/admin/announcements/${made.body.id}`, { method: "DELETE", headers: { Authorization: "Bearer test-admin-token" } });
  });
});
