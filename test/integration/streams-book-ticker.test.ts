import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket } from "./streams-support";

describe("the bookTicker stream (docs/streams.md)", () => {
  it("sends the top of the book on a change; it equals GET /api/book-ticker at the same sequence", async () => {
    await ingest(env, "*", { symbol: "SOLUSDT", book: { type: "snapshot", sequence: 1, bids: [["150.000", "1.00"]], asks: [["150.100", "2.00"]] } });
    const s = await openSocket("/api/ws?streams=bookTicker.sol-usdt", "192.0.2.80");
    await until(() => s.messages.find((m) => m.id === null && m.result), { what: "the subscribe ack" });
    // The market registers the shard on the first subscription; a change after that is sent.
    await until(
      async () => {
        const sequence = s.messages.filter((m) => m.stream === "bookTicker.SOLUSDT").length + 2;
        await ingest(env, "*", {
          symbol: "SOLUSDT",
          book: { type: "delta", sequence: await nextSequence("SOLUSDT"), bids: [["150.050", String(sequence)]], asks: [] },
        });
        return s.messages.some((m) => m.stream === "bookTicker.SOLUSDT");
      },
      { what: "a bookTicker message", intervalMs: 150 },
    );
    const last = await until(
      async () => {
        const messages = s.messages.filter((m) => m.stream === "bookTicker.SOLUSDT");
        const rest = (await callJson("/api/book-ticker/SOLUSDT")).body;
        const sent = messages.at(-1)!.data;
        return sent.sequence === rest.sequence ? { sent, rest } : undefined;
      },
      { what: "the stream and REST at the same sequence" },
    );
    expect({ ...last.sent, timestamp: 0 }).toEqual({ ...last.rest, timestamp: 0 });
    expect(last.sent).toMatchObject({ symbol: "SOLUSDT", bidPrice: "150.050", askPrice: "150.100", askQty: "2.00" });
    s.ws.close();
  });

  it("coalesces: a burst of changes sends at most one message per 100 ms, and the last one shows the final top", async () => {
    await ingest(env, "*", { symbol: "ETHBTC", book: { type: "snapshot", sequence: 1, bids: [["0.03000", "1.0000"]], asks: [["0.03100", "1.0000"]] } });
    const s = await openSocket("/api/ws?streams=bookTicker.ETHBTC", "192.0.2.81");
    await until(() => s.messages.find((m) => m.id === null && m.result), { what: "the subscribe ack" });
    let sequence = 1;
    // Make sure the shard is registered (one message arrives), then burst.
    await until(
      async () => {
        sequence += 1;
        await ingest(env, "*", { symbol: "ETHBTC", book: { type: "delta", sequence, bids: [["0.03000", `${sequence}.0000`]], asks: [] } });
        return s.messages.some((m) => m.stream === "bookTicker.ETHBTC");
      },
      { what: "the first bookTicker message", intervalMs: 150 },
    );
    const before = s.messages.filter((m) => m.stream === "bookTicker.ETHBTC").length;
    const startedAt = Date.now();
    for (let i = 0; i < 20; i++) {
      sequence += 1;
      await ingest(env, "*", { symbol: "ETHBTC", book: { type: "delta", sequence, bids: [["0.03000", `${100 + i}.0000`]], asks: [] } });
    }
    const elapsed = Date.now() - startedAt;
    const final = await until(() => s.messages.filter((m) => m.stream === "bookTicker.ETHBTC").find((m) => m.data.sequence === sequence), {
      what: "the final top",
    });
    expect(final.data.bidQty).toBe("119.0000");
    const sent = s.messages.filter((m) => m.stream === "bookTicker.ETHBTC").length - before;
    expect(sent, `messages for 20 changes over ${elapsed} ms`).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 2);
    s.ws.close();
  });
});

async function nextSequence(symbol: string): Promise<number> {
  return (await callJson(`/api/orderbook/${symbol}?depth=1`)).body.sequence + 1;
}
