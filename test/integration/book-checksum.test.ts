import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { documentedChecksum } from "../support/checksum";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket } from "./streams-support";

type Level = [string, string];

/** Best first, as the docs order them: bids descending, asks ascending (2-decimal prices here). */
function sorted(side: Map<string, string>, descending: boolean): Level[] {
  return [...side].sort(([a], [b]) => (descending ? Number(b) - Number(a) : Number(a) - Number(b)));
}

const price = (low: number, high: number) => fc.integer({ min: low, max: high }).map((cents) => (cents / 100).toFixed(2));
const quantity = fc.integer({ min: 1, max: 500_000 }).map((units) => (units / 100_000).toFixed(5));
const side = (low: number, high: number, zeros: boolean) =>
  fc.uniqueArray(fc.tuple(price(low, high), zeros ? fc.oneof(quantity, fc.constant("0")) : quantity), { selector: ([p]) => p, maxLength: 40 });

describe("verifiable books (docs/streams.md#checksums)", () => {
  it("every book message's checksum, and the REST book's, equal the documented CRC-32 of the best 25 levels a side (random books and deltas)", async () => {
    let sequence = 0;
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        side(9_000, 9_999, false),
        side(10_001, 11_000, false),
        fc.array(fc.tuple(side(9_000, 9_999, true), side(10_001, 11_000, true)), { maxLength: 6 }),
        async (bids, asks, deltas) => {
          round += 1;
          const socket = await openSocket("/api/ws?streams=book.BTCUSDC", `192.0.2.${100 + round}`);
          await until(() => socket.messages.find((m) => m.stream === "book.BTCUSDC"), { what: "the first snapshot" });
          const start = (sequence += 1);
          await ingest(env, "*", { symbol: "BTCUSDC", book: { type: "snapshot", sequence: start, bids, asks } });
          for (const [b, a] of deltas) await ingest(env, "*", { symbol: "BTCUSDC", book: { type: "delta", sequence: (sequence += 1), bids: b, asks: a } });
          const last = sequence;
          await until(() => socket.messages.find((m) => m.stream === "book.BTCUSDC" && m.data.sequence === last), { what: `sequence ${last}` });
          const book = { bids: new Map<string, string>(), asks: new Map<string, string>() };
          for (const { data } of socket.messages.filter((m) => m.stream === "book.BTCUSDC" && m.data.sequence >= start)) {
            if (data.type === "snapshot") {
              book.bids.clear();
              book.asks.clear();
            }
            for (const s of ["bids", "asks"] as const) for (const [p, q] of data[s] as Level[]) Number(q) === 0 ? book[s].delete(p) : book[s].set(p, q);
            expect(data.checksum, `checksum after sequence ${data.sequence}`).toBe(documentedChecksum(sorted(book.bids, true), sorted(book.asks, false)));
            expect(data.time, "the event time").toEqual(expect.any(Number));
          }
          const rest = (await callJson("/api/orderbook/BTCUSDC?depth=5")).body;
          expect([rest.sequence, rest.checksum], "REST: the same checksum at the same sequence, whatever the depth").toEqual([
            last,
            documentedChecksum(sorted(book.bids, true), sorted(book.asks, false)),
          ]);
          socket.ws.close();
        },
      ),
      { numRuns: 8 },
    );
  });
});
