import { describe, expect, inject, it } from "vitest";
import WebSocket from "ws";
import { type LocalBook, replay, type WebSocketConstructor } from "../../client/src/index";
import { adminToken, issuePublishKey } from "../../scripts/publish-key.mjs";
import { listVenue } from "../../scripts/venue.mjs";
import { publisherChannel } from "./publisher";

/**
 * Book history as a new user meets it (docs/history.md#book-history), against the service the e2e
 * files share, started as `npm start` does: a publisher sends a known minute of book changes; every
 * sampled sequence and moment reads back the book it built, and a replay at speed 0 rebuilds the
 * same books.
 */
const baseUrl = inject("baseUrl");
const symbol = "V0USDT"; // listed here (binance-ws-api lists it too, and publishes to V1USDT and V2USDT only); no demo feed writes it
const headers = { "CF-Connecting-IP": "198.18.45.1" };
type Level = [string, string];

const price = (n: number) => (100 + n / 100).toFixed(2);
const sorted = (side: Map<string, string>, descending: boolean): Level[] =>
  [...side].sort((a, b) => (descending ? Number(b[0]) - Number(a[0]) : Number(a[0]) - Number(b[0])));

let reads = 0;
async function bookAt(query: string) {
  // Each read from an address of its own: the public limit is 10 a second per address.
  const ip = `198.18.${46 + (Math.floor(reads / 250) % 4)}.${1 + (reads++ % 250)}`;
  const response = await fetch(`${baseUrl}/api/orderbook/${symbol}?${query}&depth=1000`, { headers: { "CF-Connecting-IP": ip } });
  expect(response.status, `GET /api/orderbook/${symbol}?${query}`).toBe(200);
  return (await response.json()) as { sequence: number; time: number; bids: Level[]; asks: Level[] };
}

describe("book history against the running service (docs/history.md#book-history)", () => {
  it("20 seconds of known book changes: ?sequence=N and ?at=T answer the book the publisher built, and a replay at speed 0 rebuilds it message by message", async () => {
    await listVenue({ url: baseUrl, token: adminToken(), count: 1 });
    const key = await issuePublishKey(baseUrl, adminToken(), { label: "book history test", markets: [symbol] });
    const channel = await publisherChannel(baseUrl, key);
    const book = { bids: new Map<string, string>(), asks: new Map<string, string>() };
    const built = new Map<number, { bids: Level[]; asks: Level[] }>();
    const keep = (sequence: number) => built.set(sequence, { bids: sorted(book.bids, true), asks: sorted(book.asks, false) });
    let sequence = 1;
    book.bids.set(price(-1), "5.000");
    book.asks.set(price(1), "5.000");
    keep(sequence);
    for (let attempt = 0; ; attempt++) {
      const answer = await channel.send({ symbol, book: { type: "snapshot", sequence, bids: [[price(-1), "5.000"]], asks: [[price(1), "5.000"]] } });
      if (answer.result) break;
      if (attempt > 40) throw new Error(`the new market takes no batch: ${JSON.stringify(answer.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 250)); // the listing reaches every isolate within a second
    }
    // 20 seconds: a batch every 100 ms, one or two deltas each; when each was acknowledged, by this clock.
    const acked: { sequence: number; at: number }[] = [];
    const started = Date.now();
    for (let b = 0; Date.now() - started < 20_000; b++) {
      const updates = Array.from({ length: 1 + (b % 2) }, (_, u) => {
        const n = b * 2 + u;
        const bids: Level[] = [
          [price(-2 - (n % 9)), `${1 + (n % 5)}.000`],
          [price(-1 - (n % 3)), n % 4 === 0 ? "0" : `${2 + (n % 11)}.000`],
        ];
        const asks: Level[] = [[price(2 + (n % 6)), n % 5 === 0 ? "0" : `${3 + (n % 7)}.000`]];
        for (const [p, q] of bids) q === "0" ? book.bids.delete(p) : book.bids.set(p, q);
        for (const [p, q] of asks) q === "0" ? book.asks.delete(p) : book.asks.set(p, q);
        keep(++sequence);
        return { type: "delta", sequence, bids, asks };
      });
      const answer = await channel.send({ symbol, book: updates });
      expect(answer.result?.book, `batch ${b}: ${JSON.stringify(answer.error ?? "")}`).toBe("applied");
      acked.push({ sequence, at: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    channel.close();
    expect(sequence, "about 300 updates in the 20 seconds").toBeGreaterThan(100);

    for (const n of [...built.keys()].filter((n) => n % 17 === 0 || n === 1 || n === sequence)) {
      const answer = await bookAt(`sequence=${n}`);
      expect({ sequence: answer.sequence, bids: answer.bids, asks: answer.asks }, `?sequence=${n}`).toEqual({ sequence: n, ...built.get(n)! });
    }
    // A moment just after an acknowledgement: that batch was applied by then, the next was not sent yet.
    for (let i = 0; i < acked.length - 1; i += 23) {
      const answer = await bookAt(`at=${acked[i]!.at}`);
      expect(answer.sequence, `?at=${acked[i]!.at}`).toBe(acked[i]!.sequence);
      expect({ bids: answer.bids, asks: answer.asks }, `?at=${acked[i]!.at}`).toEqual(built.get(acked[i]!.sequence));
    }

    const from = (await bookAt("sequence=1")).time;
    const to = (await bookAt(`sequence=${sequence}`)).time;
    let messages = 0;
    let last = 0;
    const socket = class extends WebSocket {
      constructor(url: string) {
        super(url, { headers });
      }
    } as unknown as WebSocketConstructor;
    const ended = await replay({
      baseUrl,
      streams: [`book.${symbol}`],
      from,
      to,
      speed: 0,
      WebSocket: socket,
      onBook: (_, local: LocalBook) => {
        messages += 1;
        expect({ bids: local.bids(), asks: local.asks() }, `the replayed book at ${local.sequence}`).toEqual(built.get(local.sequence));
        last = local.sequence;
      },
    });
    expect(ended.messages, "every message counted by the replay's end").toBe(messages);
    expect(messages, "the minute, replayed in messages of 100 ms windows").toBeGreaterThan(100);
    expect(last, "the replay ends at the minute's last sequence").toBe(sequence);
  }, 180_000);
});
