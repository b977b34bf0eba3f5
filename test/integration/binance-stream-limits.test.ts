import { env, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { BINANCE_MAX_MESSAGE_BYTES, BINANCE_MAX_STREAMS } from "../../src/binance/streams";
import { packNames } from "../../src/streams/attachment";
import { everyShard } from "../../src/streams/every-shard";
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

/** Rows of stream names kept in the shards' storage (src/streams/attachment.ts), over every shard. */
async function namesRows(): Promise<number> {
  let rows = 0;
  for (const name of await everyShard(env)) {
    rows += await runInDurableObject(env.STREAM_HUB.getByName(name), (_instance, state) => {
      const table = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'socket_names'").toArray();
      return table.length === 0 ? 0 : state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM socket_names").one().n;
    });
  }
  return rows;
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

  it(`takes ${BINANCE_MAX_STREAMS} of the longest names in one SUBSCRIBE, past what a socket's attachment holds, and lists them all back`, async () => {
    const names = long.flatMap((symbol) => INTERVALS.flatMap((interval) => [`${symbol}@kline_${interval}@+08:00`, `${symbol}@kline_${interval}`]));
    const taken = names.slice(0, BINANCE_MAX_STREAMS);
    expect(packNames(taken).length, "the names' packed bytes, past the 16 KiB a socket's attachment may take").toBeGreaterThan(16 * 1024);
    const socket = await openSocket("/binance/ws", "198.18.80.2");
    expect(await subscribeAll(socket, taken, BINANCE_MAX_STREAMS), "every stream taken in one SUBSCRIBE").toEqual({ held: BINANCE_MAX_STREAMS });
    socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: "all" }));
    const listed = await until(() => socket.messages.find((m) => m.id === "all"), { what: "the list" });
    expect(new Set(listed.result), "LIST_SUBSCRIPTIONS names every stream taken").toEqual(new Set(taken));
    expect(await namesRows(), "the names kept in one row of the shard").toBe(1);
    // Unsubscribing most of them brings the names back within the attachment; the rest still listed.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    socket.ws.send(JSON.stringify({ method: "UNSUBSCRIBE", params: taken.slice(10), id: "drop" }));
    await until(() => socket.messages.find((m) => m.id === "drop"), { what: "the unsubscribe's answer" });
    socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: "rest" }));
    const rest = await until(() => socket.messages.find((m) => m.id === "rest"), { what: "the second list" });
    expect(new Set(rest.result), "the ten left").toEqual(new Set(taken.slice(0, 10)));
    expect(await namesRows(), "back in the attachment: the row dropped").toBe(0);
    await subscribeAll(socket, taken.slice(10), BINANCE_MAX_STREAMS);
    expect(await namesRows(), "past the attachment again").toBe(1);
    socket.ws.close();
    await socket.closed;
    await until(async () => ((await namesRows()) === 0 ? true : undefined), { what: "the row dropped when the socket closed" });
  }, 60_000);

  it("a name whose kind is an object's own machinery (`@toString`, `@constructor`) is not a stream: Binance's error, the socket open", async () => {
    const socket = await openSocket("/binance/ws", "198.18.80.4");
    for (const [i, kind] of ["toString", "constructor", "__proto__"].entries()) {
      socket.ws.send(JSON.stringify({ method: "SUBSCRIBE", params: [`${short[0]}@${kind}`], id: i + 1 }));
      const answer = await until(() => socket.messages.find((m) => m.id === i + 1), { what: `the answer for @${kind}` });
      expect(answer.error?.msg, `@${kind}`).toContain("is not a stream here");
    }
    socket.ws.close();
  });

  it("closes with 1008 a message past the bytes one SUBSCRIBE of 1024 of the longest names takes", async () => {
    const socket = await openSocket("/binance/ws", "198.18.80.3");
    socket.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: 1, pad: "x".repeat(BINANCE_MAX_MESSAGE_BYTES) }));
    const closed = await socket.closed;
    expect([closed.code, closed.reason]).toEqual([1008, `messages are at most ${BINANCE_MAX_MESSAGE_BYTES} bytes`]);
  });
});
