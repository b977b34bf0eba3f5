import { runInDurableObject, SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { batch, send } from "../support/market-batches";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

/**
 * A market's snapshot at 1 committed, then deltas 2–5 staged for a tick that only the test ends
 * (`commit`), once the live book shows them; `done` restores the host's tick.
 */
async function stagedFour(symbol: string) {
  await ensureRegistry(env);
  const host = await hostOf(symbol);
  expect(await send(symbol, 1), "the snapshot").toBe("applied");
  await runInDurableObject(host, (instance: MarketObject) => {
    instance.tickMs = 600_000;
  });
  const staged = [2, 3, 4, 5].map((s) => send(symbol, s));
  await until(
    async () => ((await (await SELF.fetch(`http://localhost/api/orderbook/${symbol}?depth=1`)).json()) as { sequence: number }).sequence === 5 || undefined,
    { what: "the live book at 5" },
  );
  return {
    host,
    market: findMarket(symbol)!,
    commit: async () => {
      await runInDurableObject(host, (instance: MarketObject) => instance.writer.tick.commitNow());
      expect(await Promise.all(staged), "the deltas").toEqual(["applied", "applied", "applied", "applied"]);
    },
    done: () =>
      runInDurableObject(host, (instance: MarketObject) => {
        instance.tickMs = Number(env.INGEST_TICK_MS ?? "100");
      }),
  };
}

describe("a book asked by a sequence not yet committed (docs/history.md#book-history)", () => {
  it("is answered once its commit is durable, as the book at that sequence — never an older committed book, never cached final before (fails before: the committed book at 1, final)", async () => {
    const { host, market: xrp, commit, done } = await stagedFour("XRPUSDT");
    // Asked of the host itself, before the commit (a request's arrival would race the commit); the
    // open segment read once before, so the read needs no I/O and would be answered at once.
    let read: Promise<unknown> | undefined;
    await runInDurableObject(host, async (instance: MarketObject) => {
      await instance.bookAt(xrp, { sequence: 1 }, 1);
      read = instance.bookAt(xrp, { sequence: 3 }, 1);
    });
    await commit();
    const answer = (await read) as { text: string; sequence: number; final: boolean };
    expect(answer.sequence, "the book asked").toBe(3);
    expect(JSON.parse(answer.text).bids[0][1], "its bid as batch 3 left it").toBe((batch("XRPUSDT", 3).book as { bids: [string, string][] }).bids[0]![1]);
    expect(answer.final, "final once durable").toBe(true);
    await done();
  });
});

describe("a replay or catch-up page while batches wait for their commit (docs/history.md#replay)", () => {
  it("answers the committed book, never the staged one a failed commit may not write (fails before: the first page from now was the staged book at 5)", async () => {
    const { host, market: sol, commit, done } = await stagedFour("SOLUSDT");
    const pages = await runInDurableObject(host, async (instance: MarketObject) => {
      const now = Date.now() + 1;
      const fromNow = (await instance.bookReplay(sol, now, Number.MAX_SAFE_INTEGER)) as { messages: { sequence: number }[] };
      const afterOne = (await instance.bookReplay(sol, 0, Number.MAX_SAFE_INTEGER, 1)) as { messages: { sequence: number }[] };
      return { fromNow: fromNow.messages.map((m) => m.sequence), afterOne: afterOne.messages.map((m) => m.sequence) };
    });
    expect(pages.fromNow, "the first page from now: the committed book").toEqual([1]);
    expect(pages.afterOne, "the page after the committed sequence: nothing yet").toEqual([]);
    await commit();
    const after = await runInDurableObject(host, async (instance: MarketObject) => {
      const page = (await instance.bookReplay(sol, 0, Number.MAX_SAFE_INTEGER, 1)) as { messages: { sequence: number }[] };
      return page.messages.map((m) => m.sequence);
    });
    expect(after.at(-1), "once committed, the page reaches 5").toBe(5);
    await done();
  });
});
