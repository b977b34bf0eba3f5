import { runInDurableObject, SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ProblemError } from "../../src/core/problem";
import { DAY_MS } from "../../src/domain/intervals";
import { closedHistoryOf } from "../../src/history/closed-book-reads";
import { ingest } from "../../src/market/ingest";
import { MarketEngine } from "../../src/market/market-engine";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { type PageSource, streamAt, tradesPage } from "../../src/streams/catch-up-pages";
import { parseStreamName } from "../../src/streams/protocol";
import type { ResumeLog } from "../../src/streams/resume-log";
import type { MarketStore } from "../../src/writes/market-store";
import { evictWhenIdle } from "../support/evict";
import { hostOf } from "../support/registry";
import { type Expected, type Level, MarketModel, type ModelBatch } from "./venue-model";

/**
 * Model-based tests of the write path (docs/publishing.md, docs/history.md#book-history): random
 * sequences of commands — batches in order, resends of any of the last applied, stale and gapped
 * updates, snapshots, restarts of the markets' host, commits that fail, trades archived to R2 —
 * drive the real service in workerd, and after each one its answers are checked against the plain
 * model (./venue-model.ts): the live book, the book at any applied sequence, every trade once, and
 * a catch-up's trade pages complete from any trade up to the newest.
 *
 * MODEL_RUNS runs (CI: a bounded few; `npm run test:model -- --seeds N` runs N); a failure prints
 * its seed and its shrunk commands, to be kept as a regression below.
 */
const RUNS = Number((env as unknown as { MODEL_RUNS?: string }).MODEL_RUNS ?? "40");

/** Two markets of group 0 (one host, one tick, one journal): their grids never cross. */
const MARKETS = {
  BTCUSDT: { mid: 60_000, quantity: (k: number) => (k / 1000).toFixed(5) },
  ETHUSDT: { mid: 3_000, quantity: (k: number) => (k / 100).toFixed(4) },
} as const;
type Symbol = keyof typeof MARKETS;
const SYMBOLS = Object.keys(MARKETS) as Symbol[];

interface World {
  markets: Record<Symbol, MarketModel>;
  /** Trade ids and IPs are new for each command of the run. */
  counter: { next: number };
  run: number;
}

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

let runs = 0;
const T0 = Date.now();
/** Catch-ups that began inside the archive, over every run. */
let archivedStarts = 0;

/** Levels of a side: price offsets from the mid (bids below, asks above), quantity units (0 removes). */
function levels(symbol: Symbol, side: "bid" | "ask", picks: [number, number][], snapshot: boolean): Level[] {
  const { mid, quantity } = MARKETS[symbol];
  const byPrice = new Map<string, string>();
  for (const [offset, k] of picks) {
    const price = (side === "bid" ? mid - 1 - offset : mid + 1 + offset).toFixed(2);
    byPrice.set(price, quantity(snapshot ? k + 1 : k));
  }
  return [...byPrice];
}

const picks = fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 5 })), { maxLength: 4 });

function batchOf(
  world: World,
  symbol: Symbol,
  type: "snapshot" | "delta",
  sequence: number,
  bidPicks: [number, number][],
  askPicks: [number, number][],
  trades: number,
): ModelBatch {
  const snapshot = type === "snapshot";
  return {
    symbol,
    book: { type, sequence, bids: levels(symbol, "bid", bidPicks, snapshot), asks: levels(symbol, "ask", askPicks, snapshot) },
    trades: Array.from({ length: trades }, () => ({
      id: `m${world.run}-${world.counter.next++}`,
      price: MARKETS[symbol].mid.toFixed(2),
      quantity: MARKETS[symbol].quantity(1),
      side: "buy" as const,
      time: T0,
    })),
  };
}

/** What the service answered a batch, in the model's terms. */
async function sent(batch: ModelBatch): Promise<Expected> {
  try {
    const answer = await ingest(env, "*", batch);
    return { book: answer.book as "applied" | "duplicate", accepted: answer.acceptedTrades, duplicates: answer.duplicateTrades };
  } catch (error) {
    if (error instanceof ProblemError) return { refused: error.code };
    throw error;
  }
}

/** Reads from an address of their own each (10 a second an address): counted over every run. */
let reads = 0;
const read = async (path: string, _world: World) => {
  reads += 1;
  const ip = `10.${77 + ((reads >> 16) % 100)}.${(reads >> 8) % 256}.${reads % 256}`;
  return (await SELF.fetch(`http://localhost${path}`, { headers: { "CF-Connecting-IP": ip } })).json() as Promise<any>;
};

/** Sends a batch and checks its answer against the model's. */
async function publish(world: World, batch: ModelBatch): Promise<void> {
  const expected = world.markets[batch.symbol as Symbol].ingest(batch);
  expect(await sent(batch), `the answer to ${batch.book.type} ${batch.book.sequence} of ${batch.symbol}`).toEqual(expected);
}

type Command = fc.AsyncCommand<object, World>;
const command = (name: string, run: (world: World) => Promise<void>): Command => ({
  check: () => true,
  run: async (_model, world) => run(world),
  toString: () => name,
});

const commands = [
  // The next delta, with 0–3 trades.
  fc
    .tuple(fc.constantFrom(...SYMBOLS), picks, picks, fc.integer({ min: 0, max: 3 }))
    .map(([symbol, bids, asks, trades]) =>
      command(`next(${symbol}, ${JSON.stringify(bids)}, ${JSON.stringify(asks)}, ${trades})`, (world) =>
        publish(world, batchOf(world, symbol, "delta", world.markets[symbol].sequence + 1, bids, asks, trades)),
      ),
    ),
  // A snapshot, one to three sequences on.
  fc
    .tuple(fc.constantFrom(...SYMBOLS), picks, picks, fc.integer({ min: 1, max: 3 }))
    .map(([symbol, bids, asks, step]) =>
      command(`snapshot(${symbol}, +${step})`, (world) =>
        publish(world, batchOf(world, symbol, "snapshot", world.markets[symbol].sequence + step, bids, asks, 1)),
      ),
    ),
  // A resend of one of the last applied batches: duplicate, nothing taken twice.
  fc.tuple(fc.constantFrom(...SYMBOLS), fc.nat()).map(([symbol, pick]) =>
    command(`resend(${symbol}, ${pick})`, async (world) => {
      const applied = [...world.markets[symbol].applied.values()];
      if (applied.length > 0) await publish(world, applied[applied.length - 1 - (pick % Math.min(applied.length, 50))]!);
    }),
  ),
  // Another update at an applied sequence (stale), or a delta past the next (a gap): refused whole, its trade with it.
  fc.tuple(fc.constantFrom(...SYMBOLS), fc.boolean(), picks).map(([symbol, stale, bids]) =>
    command(`${stale ? "stale" : "gap"}(${symbol})`, async (world) => {
      const market = world.markets[symbol];
      const sequence = stale ? Math.max(1, market.sequence) : market.sequence + 2;
      const batch = batchOf(world, symbol, "delta", sequence, [...bids, [9, 5]], [[9, 4]], 1);
      if (stale && market.sequence === 0) return;
      await publish(world, batch);
    }),
  ),
  // The host restarts (every market of the group reloads from storage).
  fc.constant(
    command("restart", async () => {
      // Not running is as restarted: its next call starts it from storage.
      await evictWhenIdle(await hostOf("BTCUSDT")).catch((error: unknown) => {
        if (!String(error).includes("not currently running")) throw error;
      });
    }),
  ),
  // The market's next commit throws: its batch is refused (503), nothing of it kept; then its hold ends.
  fc.tuple(fc.constantFrom(...SYMBOLS), picks).map(([symbol, bids]) =>
    command(`failingCommit(${symbol})`, async (world) => {
      failNextCommit(symbol);
      const batch = batchOf(world, symbol, "delta", world.markets[symbol].sequence + 1, bids, [], 1);
      expect(await sent(batch), `a batch whose commit fails, ${symbol}`).toEqual({ refused: "MARKET_UNAVAILABLE" });
      await release(symbol);
    }),
  ),
  // The runtime dies while a batch is on its way (the host aborted mid-call, its unflushed writes
  // gone): whatever the first answer, the resend says what happened — a batch answered applied is a
  // duplicate, never lost and never applied twice.
  fc.tuple(fc.constantFrom(...SYMBOLS), picks).map(([symbol, bids]) =>
    command(`crashMidCommit(${symbol})`, async (world) => {
      const batch = batchOf(world, symbol, "delta", world.markets[symbol].sequence + 1, bids, [], 2);
      const first = sent(batch).catch((error: unknown) => ({ refused: `crashed: ${String(error).slice(0, 80)}` }) as Expected);
      await runInDurableObject(await hostOf(symbol), (_instance: unknown, state: DurableObjectState) => state.abort("crash (test)")).catch(() => undefined);
      const answered = await first;
      await release(symbol);
      const again = await sent(batch);
      const market = world.markets[symbol];
      if ("book" in answered && answered.book === "applied") {
        expect(again, `the resend of ${symbol}'s batch answered applied before the crash`).toEqual({
          book: "duplicate",
          accepted: 0,
          duplicates: batch.trades.length,
        });
        market.ingest(batch);
      } else if ("book" in again && again.book === "duplicate") {
        // Not acknowledged, yet written before the crash: there once, as the resend says.
        expect(again, `the resend of ${symbol}'s batch written before the crash`).toEqual({ book: "duplicate", accepted: 0, duplicates: batch.trades.length });
        market.ingest(batch);
      } else expect(again, `the resend of ${symbol}'s batch the crash lost (first answered ${JSON.stringify(answered)})`).toEqual(market.ingest(batch));
    }),
  ),
  // A burst of trades; then, maybe, the complete chunks archived to R2 (as if two days had passed);
  // then a catch-up's trade pages as a shard reads them (docs/streams.md#from-any-moment), from the
  // first trade at the run's time or from any trade: every trade from there once, in order, up to
  // the newest, and this run's as the model holds them.
  fc.tuple(fc.constantFrom(...SYMBOLS), fc.integer({ min: 0, max: 250 }), fc.nat(3), fc.nat()).map(([symbol, burst, archiveOdds, pick]) =>
    command(`catchUp(${symbol}, +${burst}, ${archiveOdds > 0 ? "archived" : "hot"}, ${pick})`, async (world) => {
      const archive = archiveOdds > 0;
      const market = world.markets[symbol];
      if (burst > 0) await publish(world, batchOf(world, symbol, "delta", market.sequence + 1, [], [], burst));
      const archived = await runInDurableObject(await hostOf(symbol), async (instance: MarketObject) => {
        if (archive) await instance.archiveTrades(symbol, T0 + 2 * DAY_MS, 100);
        return (instance.engine(symbol) as unknown as { store: MarketStore }).store.archivedThrough();
      });
      const [newest] = (await read(`/api/trades/${symbol}?limit=1`, world)) as { tradeId: number }[];
      if (!newest) return;
      // After an archive run, from an archived trade (the shard reads its chunks); else from any trade, or (0) by time.
      const start = archive && archived > 0 ? 1 + (pick % archived) : pick % (newest.tradeId + 1);
      if (start > 0 && start <= archived) archivedStarts += 1;
      const stream = streamAt(parseStreamName(`trades.${symbol}`)!, start === 0 ? undefined : start - 1);
      const source: PageSource = {
        env,
        closed: closedHistoryOf(env, () => {}),
        books: new Map(),
        recent: { lastTradeId: () => newest.tradeId } as unknown as ResumeLog,
        baseOf: async () => {},
      };
      const got: { tradeId: number; id: string }[] = [];
      for (let pages = 0; pages < 200; pages++) {
        const page = await tradesPage(source, T0, stream, findMarket(symbol)!);
        if (page.length === 0) break;
        for (const pending of page) got.push(...(JSON.parse(pending.text).data as { tradeId: number; id: string }[]));
        stream.cursor = page.at(-1)!.cursor;
      }
      const first = start === 0 ? 1 : start;
      expect(
        got.map((t) => t.tradeId),
        `${symbol}'s catch-up from ${start === 0 ? "the run's time" : `trade ${start}`}: every trade once, in order, up to ${newest.tradeId}`,
      ).toEqual(Array.from({ length: newest.tradeId - first + 1 }, (_, i) => first + i));
      const ours = got.map((t) => t.id).filter((id) => id.startsWith(`m${world.run}-`));
      const held = [...market.trades.keys()];
      expect(ours, `${symbol}'s trades of this run in the catch-up: the model's, from where it began`).toEqual(
        start === 0 ? held : held.slice(held.length - ours.length),
      );
    }),
  ),
  // The live book.
  fc.constantFrom(...SYMBOLS).map((symbol) =>
    command(`readBook(${symbol})`, async (world) => {
      const market = world.markets[symbol];
      const book = await read(`/api/orderbook/${symbol}?depth=100`, world);
      expect({ sequence: book.sequence, bids: book.bids, asks: book.asks }, `the live book of ${symbol}`).toEqual({
        sequence: market.sequence,
        ...market.levels(),
      });
    }),
  ),
  // The book at an applied sequence, from its history.
  fc.tuple(fc.constantFrom(...SYMBOLS), fc.nat()).map(([symbol, pick]) =>
    command(`readAt(${symbol}, ${pick})`, async (world) => {
      const sequences = [...world.markets[symbol].history.keys()];
      if (sequences.length === 0) return;
      const sequence = sequences[pick % sequences.length]!;
      const book = await read(`/api/orderbook/${symbol}?sequence=${sequence}&depth=100`, world);
      expect({ sequence: book.sequence, bids: book.bids, asks: book.asks }, `the book of ${symbol} at ${sequence}`).toEqual({
        sequence,
        ...world.markets[symbol].history.get(sequence),
      });
    }),
  ),
  // Every trade the market holds: each taken one once, nothing refused.
  fc.constantFrom(...SYMBOLS).map((symbol) =>
    command(`readTrades(${symbol})`, async (world) => {
      const ids: string[] = [];
      for (let fromId = 1; ; ) {
        const page = (await read(`/api/trades/${symbol}?fromId=${fromId}&limit=1000`, world)) as { id: string; tradeId: number }[];
        expect(Array.isArray(page), `a page of ${symbol}'s trades: ${JSON.stringify(page).slice(0, 200)}`).toBe(true);
        ids.push(...page.map((t) => t.id).filter((id) => id.startsWith(`m${world.run}-`)));
        // A short page is not the end (a page reads at most 8 archived chunks); an empty one is (docs/history.md#trades).
        if (page.length === 0) break;
        fromId = page.at(-1)!.tradeId + 1;
      }
      expect([...ids].sort(), `the trades of ${symbol}: each taken once, none refused`).toEqual([...world.markets[symbol].trades.keys()].sort());
    }),
  ),
];

/** Ends a market's hold after a failure now (its back-off is real time; the model's commands are not). */
async function release(symbol: string): Promise<void> {
  await runInDurableObject(await hostOf(symbol), (instance: MarketObject) => {
    const held = (instance as unknown as { quarantine: { held: Map<string, { until: number }> } }).quarantine.held.get(symbol);
    if (held) held.until = 0;
  });
}

/** Makes the next `commitStaged` of `symbol` throw, once (the engine's prototype: rebuilt engines too). */
function failNextCommit(symbol: string): void {
  const prototype = MarketEngine.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const original = prototype.commitStaged!;
  let armed = true;
  prototype.commitStaged = function (this: { state?: { market: { symbol: string } } }, ...args: unknown[]) {
    if (armed && this.state?.market.symbol === symbol) {
      armed = false;
      prototype.commitStaged = original;
      throw new Error(`injected commit fault of ${symbol}`);
    }
    return original.apply(this, args);
  };
  restore.push(() => {
    prototype.commitStaged = original;
  });
}

describe("the write path against its model (test/model/venue-model.ts)", () => {
  it(`${RUNS} runs of random commands: every answer, book and trade as the model says`, async () => {
    await ensureRegistry(env);
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        runs += 1;
        const world: World = {
          markets: Object.fromEntries(SYMBOLS.map((s) => [s, new MarketModel(s)])) as Record<Symbol, MarketModel>,
          counter: { next: 0 },
          run: runs,
        };
        // Each run (a shrink's too) takes the markets over from what the last one left, whatever it was.
        for (const undo of restore.splice(0)) undo();
        for (const symbol of SYMBOLS) {
          await release(symbol);
          const live = await read(`/api/orderbook/${symbol}?depth=1`, world);
          expect(live.sequence, `${symbol}'s book before a run: ${JSON.stringify(live).slice(0, 200)}`).toBeTypeOf("number");
          // A snapshot begins each run's book: the model's first state.
          world.markets[symbol].sequence = live.sequence;
          await publish(world, batchOf(world, symbol, "snapshot", live.sequence + 1, [[0, 1]], [[0, 1]], 0));
        }
        await fc.asyncModelRun(() => ({ model: {}, real: world }), cmds);
      }),
      { numRuns: RUNS, verbose: 1 },
    );
    // The catch-ups went through the archive too, not only through hot trades.
    if (RUNS >= 20) expect(archivedStarts, "catch-ups that began inside the archive, over every run").toBeGreaterThan(0);
  });
});
