import { beforeAll, describe, expect, it } from "vitest";
import { BINANCE_MAX_MESSAGE_BYTES, BINANCE_MAX_STREAMS } from "../../src/binance/streams";
import { packNames } from "../../src/streams/attachment";
import { MAX_MESSAGE_BYTES, MAX_STREAM_NAME_BYTES } from "../../src/streams/protocol";
import { BINANCE_STREAM_KINDS } from "../support/binance-stream-kinds";
import { until } from "../support/poll";
import { listThroughAdmin, registry } from "../support/registry";
import { openSocket, type TestSocket } from "./streams-support";

const rules = { tickSize: "0.01", stepSize: "0.001", minQty: "0.001", maxQty: "1000000", minNotional: "1" };
const INTERVALS = ["1s", "1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w", "1M"];

/** Lists `count` markets `{prefix}{i}USDT` through the operator API. */
async function list(prefix: string, count: number): Promise<string[]> {
  const assets = Array.from({ length: count }, (_, i) => ({ asset: `${prefix}${i}`, name: `${prefix} ${i}`, decimals: 8 }));
  await listThroughAdmin("/admin/assets", assets);
  await listThroughAdmin(
    "/admin/markets",
    assets.map((a) => ({ base: a.asset, quote: "USDT", ...rules })),
  );
  return assets.map((a) => `${a.asset}USDT`.toLowerCase());
}

/** Subscribes `names` in requests of `per`, five a second (Binance's rate); the answer to the last. */
async function subscribeAll(socket: TestSocket, names: string[], per = 100): Promise<{ held: number; refusal?: string }> {
  const first = socket.messages.length + 1; // ids new on this socket
  let id = first - 1;
  for (let i = 0; i < names.length; i += per) {
    // Five messages in any second: a pause before each fifth, and before the first of a later call.
    if ((id - first + 1) % 4 === 0) await new Promise((resolve) => setTimeout(resolve, 1_050));
    id += 1;
    socket.ws.send(JSON.stringify({ method: "SUBSCRIBE", params: names.slice(i, i + per), id }));
    const answer = await until(() => socket.messages.find((m) => m.id === id), { what: `the answer to subscribe ${id}` });
    if (answer.error) {
      await new Promise((resolve) => setTimeout(resolve, 1_050)); // five messages a second
      socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: "list" }));
      const listed = await until(() => socket.messages.find((m) => m.id === "list"), { what: "the list" });
      return { held: listed.result.length, refusal: answer.error.msg };
    }
  }
  return { held: names.length };
}

let short: string[] = [];
let long: string[] = [];
beforeAll(async () => {
  short = await list("S", 65);
  long = await list("LONGNAMEDASSET", 45); // longnamedasset12usdt: 20 characters, Binance's longest symbol
  await until(async () => ((await registry()).listed.length >= 7 + 65 + 45 ? true : undefined), { what: "the listing" });
}, 60_000);

describe("streams per Binance connection (docs/binance.md#streams)", () => {
  it(`holds ${BINANCE_MAX_STREAMS} streams, as Binance, subscribed in one message, and refuses one more with Binance's error 2`, async () => {
    const names = short.flatMap((symbol) => [...BINANCE_STREAM_KINDS, "ticker_1h", "ticker_4h"].map((kind) => `${symbol}@${kind}`));
    expect(names.length).toBeGreaterThan(BINANCE_MAX_STREAMS);
    expect(packNames(names.slice(0, BINANCE_MAX_STREAMS)).length, "short names fit the attachment's budget").toBeLessThanOrEqual(MAX_STREAM_NAME_BYTES);
    const socket = await openSocket("/binance/ws", "198.18.80.1");
    const one = JSON.stringify({ method: "SUBSCRIBE", params: names.slice(0, BINANCE_MAX_STREAMS), id: 1 });
    expect(one.length, "the one SUBSCRIBE's bytes, past a native message's 4 KiB").toBeGreaterThan(MAX_MESSAGE_BYTES);
    expect(await subscribeAll(socket, names.slice(0, BINANCE_MAX_STREAMS), BINANCE_MAX_STREAMS), "every stream taken in one SUBSCRIBE").toEqual({
      held: BINANCE_MAX_STREAMS,
    });
    const outcome = await subscribeAll(socket, names.slice(BINANCE_MAX_STREAMS, BINANCE_MAX_STREAMS + 1));
    expect(outcome.held, "streams held").toBe(BINANCE_MAX_STREAMS);
    expect(outcome.refusal).toContain(`at most ${BINANCE_MAX_STREAMS} streams`);
    socket.ws.close();
  }, 60_000);

  it("holds long names up to the bytes a connection keeps them in, and refuses the request that would go past", async () => {
    const names = long.flatMap((symbol) => INTERVALS.flatMap((interval) => [`${symbol}@kline_${interval}`, `${symbol}@kline_${interval}@+08:00`]));
    const fit = names.findIndex((_, i) => packNames(names.slice(0, i + 1)).length > MAX_STREAM_NAME_BYTES);
    expect(fit, "fewer long names than the count allows fit").toBeLessThan(BINANCE_MAX_STREAMS);
    const socket = await openSocket("/binance/ws", "198.18.80.2");
    const outcome = await subscribeAll(socket, names);
    // All or nothing per request: the request that would pass the budget is refused whole.
    expect(outcome.held, "streams held").toBe(Math.floor(fit / 100) * 100);
    expect(outcome.refusal).toContain(`${MAX_STREAM_NAME_BYTES} bytes`);
    socket.ws.close();
  }, 60_000);

  it("closes with 1008 a message past the bytes one SUBSCRIBE of 1024 of the longest names takes", async () => {
    const socket = await openSocket("/binance/ws", "198.18.80.3");
    socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: 1, pad: "x".repeat(BINANCE_MAX_MESSAGE_BYTES) }));
    const closed = await socket.closed;
    expect([closed.code, closed.reason]).toEqual([1008, `messages are at most ${BINANCE_MAX_MESSAGE_BYTES} bytes`]);
  });
});
