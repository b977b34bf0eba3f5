import { describe, expect, it } from "vitest";
import { PUBLISH_LIMIT, SIGNED_LIMIT } from "../../src/access/rate-limit";
import { MAX_BOOK_UPDATES_PER_BATCH } from "../../src/market/schemas";
import { newPublishKey, signedCall } from "../support/accounts";
import { callJson } from "../support/http";

const publisher = () => newPublishKey();
const post = async (key: { id: string; secret: string }, body: unknown) => {
  const response = await signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify(body) });
  return { status: response.status, body: await response.json<any>() };
};
const delta = (sequence: number, bid: string, quantity = "1.0000") => ({ type: "delta", sequence, bids: [[bid, quantity]], asks: [] });

describe("ingest batches of many book updates (docs/publishing.md#batches)", () => {
  it("applies an array of updates in order: a snapshot and deltas, the book at the last sequence", async () => {
    const key = await publisher();
    const answer = await post(key, {
      symbol: "ETHUSDT",
      book: [
        { type: "snapshot", sequence: 1, bids: [["3000.00", "1.0000"]], asks: [["3001.00", "1.0000"]] },
        delta(2, "2999.00"),
        delta(3, "2999.00", "0"),
        delta(4, "2998.50", "2.5000"),
      ],
    });
    expect(answer).toEqual({ status: 200, body: { symbol: "ETHUSDT", acceptedTrades: 0, duplicateTrades: 0, sequence: 4, book: "applied" } });
    expect((await callJson("/api/orderbook/ETHUSDT")).body).toMatchObject({
      sequence: 4,
      bids: [
        ["3000.00", "1.0000"],
        ["2998.50", "2.5000"],
      ],
      asks: [["3001.00", "1.0000"]],
    });
  });

  it("is all or nothing: a gap inside the batch is 409 naming the update, and neither its book updates nor its trades are applied", async () => {
    const key = await publisher();
    await post(key, { symbol: "SOLUSDT", book: { type: "snapshot", sequence: 10, bids: [["150.000", "1.00"]], asks: [["151.000", "1.00"]] } });
    const refused = await post(key, {
      symbol: "SOLUSDT",
      book: [delta(11, "149.000"), delta(13, "148.000")],
      trades: [{ id: "batch-gap-1", price: "150.500", quantity: "1.00", side: "buy", time: Date.now() }],
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: "SEQUENCE_GAP", bookIndex: 1, expectedSequence: 12 });
    expect(refused.body.detail).toContain("nothing of the batch was applied");
    expect((await callJson("/api/orderbook/SOLUSDT")).body).toMatchObject({ sequence: 10, bids: [["150.000", "1.00"]] });
    expect((await callJson("/api/trades/SOLUSDT")).body.map((t: { id: string }) => t.id)).not.toContain("batch-gap-1");
    // A crossed book in the middle: the same.
    const crossed = await post(key, { symbol: "SOLUSDT", book: [delta(11, "149.000"), delta(12, "152.000"), delta(13, "148.000")] });
    expect([crossed.status, crossed.body.code, crossed.body.bookIndex]).toEqual([400, "VALIDATION_FAILED", 1]);
    expect((await callJson("/api/orderbook/SOLUSDT")).body.sequence).toBe(10);
  });

  it("an exact resend of a batch changes nothing and says so; a different batch at those sequences is stale", async () => {
    const key = await publisher();
    await post(key, { symbol: "XRPUSDT", book: { type: "snapshot", sequence: 1, bids: [["0.5000", "10.0"]], asks: [["0.5100", "10.0"]] } });
    const batch = {
      symbol: "XRPUSDT",
      book: [delta(2, "0.4900"), delta(3, "0.4800")],
      trades: [{ id: "resend-1", price: "0.5000", quantity: "10.0", side: "buy", time: Date.now() }],
    };
    expect((await post(key, batch)).body).toMatchObject({ sequence: 3, book: "applied", acceptedTrades: 1 });
    expect((await post(key, batch)).body).toMatchObject({ sequence: 3, book: "duplicate", acceptedTrades: 0, duplicateTrades: 1 });
    const other = await post(key, { symbol: "XRPUSDT", book: [delta(2, "0.4700"), delta(3, "0.4600")] });
    expect([other.status, other.body.code]).toEqual([409, "STALE_SEQUENCE"]);
  });

  it(`takes up to ${MAX_BOOK_UPDATES_PER_BATCH} updates; more is 400, a body over 1 MiB is 413`, async () => {
    const key = await publisher();
    await post(key, { symbol: "BTCUSDC", book: { type: "snapshot", sequence: 1, bids: [["90000.00", "1.00000"]], asks: [["90001.00", "1.00000"]] } });
    const many = (n: number) => Array.from({ length: n }, (_, i) => delta(2 + i, "89999.00", (1 + (i % 5)).toFixed(5)));
    const full = await post(key, { symbol: "BTCUSDC", book: many(MAX_BOOK_UPDATES_PER_BATCH) });
    expect(full.body).toMatchObject({ sequence: 1 + MAX_BOOK_UPDATES_PER_BATCH, book: "applied" });
    const over = await post(key, { symbol: "BTCUSDC", book: many(MAX_BOOK_UPDATES_PER_BATCH + 1) });
    expect([over.status, over.body.code]).toEqual([400, "VALIDATION_FAILED"]);
    const huge = await signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "BTCUSDC", trades: [], pad: "x".repeat(1024 * 1024) }) });
    expect(huge.status).toBe(413);
  });
});

describe("the publish limit, apart from the read limit (docs/limits.md#publishing)", () => {
  it(`a key's reads stop at ${SIGNED_LIMIT} a second while its publishing goes on; publishing admits exactly ${PUBLISH_LIMIT} a second`, async () => {
    const key = await publisher();
    const reads = await Promise.all(Array.from({ length: SIGNED_LIMIT + 5 }, () => signedCall(key, "GET", "/v1/ticker/24hr?symbol=BTCUSDT")));
    expect(reads.filter((r) => r.status === 200)).toHaveLength(SIGNED_LIMIT);
    const publishes = await Promise.all(
      Array.from({ length: PUBLISH_LIMIT + 20 }, () => signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "ETHBTC", trades: [] }) })),
    );
    const admitted = publishes.filter((r) => r.status === 200);
    const limited = publishes.filter((r) => r.status === 429);
    expect([admitted.length, limited.length]).toEqual([PUBLISH_LIMIT, 20]);
    expect(limited[0]!.headers.get("RateLimit-Limit")).toBe(String(PUBLISH_LIMIT));
    expect(((await limited[0]!.json()) as { detail: string }).detail).toContain("publishing");
  });
});
