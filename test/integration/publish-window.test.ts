import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RESEND_WINDOW } from "../../src/domain/order-book";
import { MAX_UNACKED_PER_GROUP, MAX_UNACKED_PER_MARKET } from "../../src/publish/channel-window";
import { MAX_BATCHES_PER_MESSAGE, MAX_UNACKED } from "../../src/publish/protocol";
import { newPublishKey } from "../support/accounts";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf, listThroughAdmin, registry } from "../support/registry";
import { openSocket, publishPath, type TestSocket } from "./streams-support";

// The publisher channel's window (docs/publishing.md#flow-control): what one connection, one group
// and one market may have awaiting their answer, each past it refused, never dropped.

const answerOf = (socket: TestSocket, id: unknown) => until(() => socket.messages.find((m) => m.id === id), { what: `the answer to ${String(id)}` });

/** Group 0's host (the seven default markets) holds every batch until `release`, so the window fills whatever the machine's speed. */
async function holdGroupZero(): Promise<{ release: () => void; restore: () => Promise<void> }> {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const host = await hostOf("ETHBTC");
  let undo = () => {};
  await runInDurableObject(host, (instance: object) => {
    const prototype = Object.getPrototypeOf(instance) as Record<string, (...args: unknown[]) => unknown>;
    const original = prototype.ingestAll!;
    prototype.ingestAll = async function (this: unknown, ...args: unknown[]) {
      if (this === instance) await held;
      return original.apply(this, args);
    };
    undo = () => {
      prototype.ingestAll = original;
    };
  });
  return { release, restore: () => runInDurableObject(host, () => undo()) };
}

/** Group 0's markets with a trade each accepts, and the trade of batch `n`. */
const MARKETS: Record<string, [string, string]> = {
  ETHBTC: ["0.03500", "1.0000"],
  XRPUSDT: ["0.6050", "5.0"],
  SOLUSDT: ["150.000", "1.00"],
  ETHUSDT: ["3000.00", "1.0000"],
};
const batchOf = (n: number, symbol: string, prefix: string) => {
  const [price, quantity] = MARKETS[symbol]!;
  return { id: n, symbol, trades: [{ id: `${prefix}-${n}`, price, quantity, side: "buy", time: Date.now() }] };
};

/** Sends `count` batches in arrays, as a venue's publisher does (the window counts batches, not messages). */
function sendAll(socket: TestSocket, count: number, symbolOf: (n: number) => string, prefix: string): void {
  for (let n = 0; n < count; n += MAX_BATCHES_PER_MESSAGE) {
    socket.ws.send(JSON.stringify(Array.from({ length: Math.min(MAX_BATCHES_PER_MESSAGE, count - n) }, (_, i) => batchOf(n + i, symbolOf(n + i), prefix))));
  }
}

/** The trade ids of `symbol` the market holds among its newest 1,000. */
async function tradeIds(symbol: string): Promise<Set<string>> {
  return new Set(((await callJson(`/api/trades/${symbol}?limit=1000`)).body as { id: string }[]).map((t) => t.id));
}

describe("the publisher channel's window (docs/publishing.md#flow-control)", () => {
  it(`refuses a batch past its group's ${MAX_UNACKED_PER_GROUP} awaiting their answer with an error, never a silent drop; a stalled group leaves the rest of the window to the others (fails before: it took all ${MAX_UNACKED})`, async () => {
    // A market of another group (ordinal 64 or more): the seven default markets are group 0.
    const assets = Array.from({ length: 58 }, (_, i) => ({ asset: `FC${i}`, name: `Flow ${i}`, decimals: 8 }));
    await listThroughAdmin("/admin/assets", assets);
    await listThroughAdmin(
      "/admin/markets",
      assets.map((a) => ({ base: a.asset, quote: "USDT", tickSize: "0.01", stepSize: "0.001", minQty: "0.001", maxQty: "1000000", minNotional: "1" })),
    );
    const other = await until(async () => (await registry()).listed.find((m) => m.ordinal >= 64), { what: "a market of group 1" });
    const socket = await openSocket(await publishPath(await newPublishKey()), "203.0.130.3");
    const symbols = Object.keys(MARKETS);
    const symbolOf = (n: number) => symbols[n % symbols.length]!;
    const hold = await holdGroupZero();
    const count = MAX_UNACKED;
    try {
      sendAll(socket, count, symbolOf, "group");
      const refused = await until(() => {
        const got = socket.messages.filter((m) => typeof m.id === "number" && m.error);
        return got.length === count - MAX_UNACKED_PER_GROUP && got;
      });
      expect(refused.map((m) => m.id)).toEqual(Array.from({ length: count - MAX_UNACKED_PER_GROUP }, (_, i) => MAX_UNACKED_PER_GROUP + i));
      for (const m of refused) expect(m.error).toMatchObject({ code: "RATE_LIMITED", maxUnackedPerGroup: MAX_UNACKED_PER_GROUP });
      // Another group's batch, while group 0's still wait: taken and answered.
      socket.ws.send(
        JSON.stringify({ id: "other", symbol: other.symbol, trades: [{ id: "flow-other", price: "1.00", quantity: "1.000", side: "buy", time: Date.now() }] }),
      );
      const answer = await answerOf(socket, "other");
      expect(answer.error, `${other.symbol}'s batch while group 0 is stalled`).toBeUndefined();
      expect(answer.result.acceptedTrades).toBe(1);
    } finally {
      hold.release();
    }
    const answers = await until(() => {
      const got = socket.messages.filter((m) => typeof m.id === "number");
      return got.length === count && got;
    });
    await hold.restore();
    // Every batch answered with a result was applied; none answered with an error was.
    expect(answers.filter((m) => !m.error).length, "batches applied").toBe(MAX_UNACKED_PER_GROUP);
    const held = Object.fromEntries(await Promise.all(symbols.map(async (s) => [s, await tradeIds(s)] as const)));
    for (const m of answers) expect(held[symbolOf(m.id)]!.has(`group-${m.id}`), `batch ${m.id} (${m.error ? "refused" : "applied"})`).toBe(!m.error);
    socket.ws.close();
  });

  it(`refuses a market's batch past ${MAX_UNACKED_PER_MARKET} awaiting their answer — every batch a publisher may have to resend after a crash is among the ${RESEND_WINDOW} its market recognises (fails before: one market took the group's ${MAX_UNACKED_PER_GROUP})`, async () => {
    expect(MAX_UNACKED_PER_MARKET, "the market's share of the window is what a market recognises on resend").toBeLessThanOrEqual(RESEND_WINDOW);
    const socket = await openSocket(await publishPath(await newPublishKey()), "203.0.130.9");
    const hold = await holdGroupZero();
    const count = MAX_UNACKED_PER_MARKET + 100;
    try {
      sendAll(socket, count, () => "ETHBTC", "market");
      const refused = await until(() => {
        const got = socket.messages.filter((m) => typeof m.id === "number" && m.error);
        return got.length === count - MAX_UNACKED_PER_MARKET && got;
      });
      expect(refused.map((m) => m.id)).toEqual(Array.from({ length: count - MAX_UNACKED_PER_MARKET }, (_, i) => MAX_UNACKED_PER_MARKET + i));
      for (const m of refused) expect(m.error).toMatchObject({ code: "RATE_LIMITED", maxUnackedPerMarket: MAX_UNACKED_PER_MARKET });
      // Another market of the same group is still taken: the group's share is not full.
      socket.ws.send(JSON.stringify(batchOf(count, "XRPUSDT", "market")));
    } finally {
      hold.release();
    }
    expect((await answerOf(socket, count)).result?.acceptedTrades, "XRPUSDT's batch beside ETHBTC's full share").toBe(1);
    const answers = await until(() => {
      const got = socket.messages.filter((m) => typeof m.id === "number" && m.id < count);
      return got.length === count && got;
    });
    await hold.restore();
    const ids = await tradeIds("ETHBTC");
    for (const m of answers.filter((m) => m.error)) expect(ids.has(`market-${m.id}`), `refused batch ${m.id}`).toBe(false);
    expect(ids.has(`market-${MAX_UNACKED_PER_MARKET - 1}`), "the last batch taken").toBe(true);
    socket.ws.close();
  });
});
