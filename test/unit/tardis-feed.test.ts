import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { WireTrade } from "../../src/domain/wire-trade";
import type { ReplayBookMessage } from "../../src/history/book-replay";
import { DATASET_HEADERS, tradeHourRows, tradesOfRows } from "../../src/history/datasets";
import { FEED_CHANNELS, type FeedChannel, minuteLines, minuteText } from "../../src/tardis/feed-lines";

/** Prices at 2 decimals, quantities at 3: the market's scales. */
const scales = { priceScale: 2, quantityScale: 3 };
const price = (n: number) => (100 + n).toFixed(2);
const quantity = (n: number) => (n / 1000).toFixed(3);
type Level = [string, string];

/** A plain book: text levels, best first. */
class Model {
  bids = new Map<string, string>();
  asks = new Map<string, string>();
  apply(bids: Level[], asks: Level[], whole = false) {
    if (whole) {
      this.bids.clear();
      this.asks.clear();
    }
    for (const [p, q] of bids) Number(q) === 0 ? this.bids.delete(p) : this.bids.set(p, q);
    for (const [p, q] of asks) Number(q) === 0 ? this.asks.delete(p) : this.asks.set(p, q);
  }
  sides() {
    const sorted = (side: Map<string, string>, descending: boolean) =>
      [...side].sort((a, b) => (descending ? Number(b[0]) - Number(a[0]) : Number(a[0]) - Number(b[0])));
    return { bids: sorted(this.bids, true), asks: sorted(this.asks, false) };
  }
}

/** A side's levels from level numbers: bids below 50, asks above; each price once. */
const side = (ask: boolean) =>
  fc
    .uniqueArray(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5_000 })), { selector: ([n]) => n, maxLength: 6 })
    .map((levels) => levels.map(([n, q]): Level => [price(ask ? 60 + n : n), quantity(q)]));

/** An opening book and messages 1..n after it, some whole books (a publisher's resync), 0–150 ms apart. */
const history = fc
  .record({
    opening: fc.tuple(side(false), side(true)),
    steps: fc.array(
      fc.record({ whole: fc.integer({ min: 0, max: 4 }).map((n) => n === 0), bids: side(false), asks: side(true), gap: fc.integer({ min: 0, max: 150 }) }),
      {
        maxLength: 40,
      },
    ),
  })
  .map(({ opening, steps }) => {
    const start = 1_796_600_000_000;
    const model = new Model();
    const strip = (levels: Level[]) => levels.filter(([, q]) => Number(q) > 0);
    model.apply(strip(opening[0]), strip(opening[1]), true);
    const open: ReplayBookMessage = { type: "snapshot", sequence: 10, time: start - 1, checksum: 0, ...model.sides() };
    let time = start;
    const books: { bids: Level[]; asks: Level[] }[] = [];
    const messages: ReplayBookMessage[] = steps.map((step, i) => {
      time += step.gap;
      if (step.whole) model.apply(strip(step.bids), strip(step.asks), true);
      else model.apply(step.bids, step.asks);
      books.push(model.sides());
      const sequence = 11 + i;
      return step.whole
        ? { type: "snapshot", firstSequence: sequence, sequence, time, checksum: 0, ...model.sides() }
        : { type: "delta", firstSequence: sequence, sequence, time, checksum: 0, bids: step.bids, asks: step.asks };
    });
    return { start, open, messages, books };
  });

const trades = (start: number) =>
  fc
    .array(fc.integer({ min: 0, max: 59_999 }), { maxLength: 20 })
    .map((times) =>
      times
        .sort((a, b) => a - b)
        .map(
          (t, i): WireTrade => ({ tradeId: 100 + i, id: `t${i}`, price: price(50), quantity: quantity(1 + i), side: i % 2 ? "sell" : "buy", time: start + t }),
        ),
    );

function parse(text: string) {
  return text
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => ({ at: line.slice(0, 28), time: Date.parse(line.slice(0, 28)), message: JSON.parse(line.slice(29)) }));
}

describe("a minute of the Tardis-compatible feed (docs/tardis.md#data-feeds)", () => {
  it("the snapshot and the depth diffs rebuild the book after every message, resyncs included; bookTicker says each change of the top once; every trade once, in time order", () => {
    fc.assert(
      fc.property(
        history.chain((h) => trades(h.start).map((t) => ({ ...h, trades: t }))),
        ({ start, open, messages, books, trades: minuteTrades }) => {
          const channels = new Set<FeedChannel>(FEED_CHANNELS);
          const lines = parse(
            minuteText([
              minuteLines({ symbol: "BTCUSDT", scales, channels, opening: open, book: messages, trades: minuteTrades, snapshot: true, start }).lines,
            ]),
          );
          expect(
            lines.map((l) => l.time),
            "lines in time order",
          ).toEqual(lines.map((l) => l.time).sort((a, b) => a - b));
          expect(
            lines.every((l) => l.at.length === 28 && l.at.endsWith("Z")),
            "28-character moments",
          ).toBe(true);
          const [first] = lines;
          expect(first!.message, "the replay opens with the generated snapshot").toMatchObject({ stream: "btcusdt@depthSnapshot", generated: true });
          const model = new Model();
          model.apply(first!.message.data.bids, first!.message.data.asks, true);
          let lastUpdateId = first!.message.data.lastUpdateId as number;
          let diffs = 0;
          let top = "";
          const topOf = () => {
            const { bids, asks } = model.sides();
            return `${bids[0]?.[0] ?? "0"}|${bids[0]?.[1] ?? "0"}|${asks[0]?.[0] ?? "0"}|${asks[0]?.[1] ?? "0"}`;
          };
          const said: string[] = [];
          for (const { message } of lines) {
            if (message.stream === "btcusdt@depth@100ms") {
              const { U, u, b, a } = message.data;
              expect(U, "each diff goes on from the last").toBe(lastUpdateId + 1);
              model.apply(b, a);
              lastUpdateId = u;
              expect(model.sides(), `the book after message ${u}`).toEqual(books[diffs]);
              diffs += 1;
              if (topOf() !== top) said.push(topOf());
              top = topOf();
            } else if (message.stream === "btcusdt@bookTicker") {
              const { b, B, a, A } = message.data;
              expect(`${b}|${B}|${a}|${A}`, "bookTicker is the top of the book rebuilt so far").toBe(diffs === 0 ? topOf() : top);
              if (diffs === 0) top = topOf();
            }
          }
          expect(diffs, "a diff for every message").toBe(messages.length);
          const tickers = lines
            .filter((l) => l.message.stream === "btcusdt@bookTicker")
            .map((l) => `${l.message.data.b}|${l.message.data.B}|${l.message.data.a}|${l.message.data.A}`);
          expect(tickers.slice(1), "a bookTicker for each change of the top, none else").toEqual(said);
          expect(
            lines.filter((l) => l.message.stream === "btcusdt@trade").map((l) => l.message.data.t),
            "every trade once",
          ).toEqual(minuteTrades.map((t) => t.tradeId));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a day's trades file, cut into hours and read back, gives every trade once with its side (the buyer was the maker: the taker sold)", () => {
    const day = 1_796_515_200_000;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 86_399_999 }), fc.boolean()), { maxLength: 50 }), (rows) => {
        const csv = rows.map(([t, maker], i) => `${i + 1},${price(i)},${quantity(i + 1)},0,${day + t},${maker ? "True" : "False"},True\n`).join("");
        const hours = tradeHourRows("BTCUSDT", day, csv);
        expect(hours).toHaveLength(24);
        const read = hours.flatMap((text, h) => {
          const trades = tradesOfRows(DATASET_HEADERS.trades + text);
          for (const t of trades) expect(Math.floor((t.time - day) / 3_600_000), `trade ${t.tradeId} in its hour`).toBe(h);
          return trades;
        });
        expect(read.sort((a, b) => a.tradeId - b.tradeId)).toEqual(
          rows.map(([t, maker], i) => ({
            tradeId: i + 1,
            id: String(i + 1),
            price: price(i),
            quantity: quantity(i + 1),
            side: maker ? "sell" : "buy",
            time: day + t,
          })),
        );
      }),
    );
  });
});
