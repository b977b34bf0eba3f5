import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ProblemError } from "../../src/core/problem";
import { ingest } from "../../src/market/ingest";
import type { IngestBody } from "../../src/market/schemas";
import { SEGMENT_MAX_BYTES } from "../../src/writes/book-log";
import { evictWhenIdle } from "../support/evict";
import { hostOf } from "../support/registry";

type Book = NonNullable<IngestBody["book"]>;
const symbol = "ETHUSDT";
const snapshot = (sequence: number, levels: number, shift = 0): Book => ({
  type: "snapshot",
  sequence,
  bids: Array.from({ length: levels }, (_, i) => [(5000 - i - shift / 100).toFixed(2), "1.0000"] as [string, string]),
  asks: Array.from({ length: levels }, (_, i) => [(5100 + i).toFixed(2), "1.0000"] as [string, string]),
});
const delta = (sequence: number): Book => ({ type: "delta", sequence, bids: [[(1000 + sequence / 100).toFixed(2), "2.0000"]], asks: [] });
const send = (book: Book | Book[]) => ingest(env, "*", { symbol, book } as IngestBody);
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => "applied",
    (error) => (error instanceof ProblemError ? error.code : String(error)),
  );

describe("a resend after the market's host restarted is recognised (docs/publishing.md#resending)", () => {
  it("every one of the last applied updates, before and after a segment closed, answers duplicate; a different one is STALE_SEQUENCE; nothing changes (fails before)", async () => {
    // Snapshots of 3,000 levels a side (~150 KB each) until the open segment closes, then deltas and a batch.
    const sent: (Book | Book[])[] = [];
    let sequence = 0;
    for (let bytes = 0; bytes < SEGMENT_MAX_BYTES * 1.2; bytes += 100_000) sent.push(snapshot(++sequence, 3_000, sequence));
    for (let i = 0; i < 5; i++) sent.push(delta(++sequence));
    sent.push([delta(++sequence), delta(++sequence), delta(++sequence)]);
    sent.push(delta(++sequence));
    for (const book of sent) expect((await send(book)).book).toBe("applied");

    await evictWhenIdle(await hostOf(symbol));

    for (const [i, book] of sent.entries()) {
      const again = await send(book);
      expect(again.book, `resend ${i} of ${sent.length} (sequence ${JSON.stringify(book).length > 200 ? "a snapshot" : JSON.stringify(book)})`).toBe(
        "duplicate",
      );
      expect(again.sequence, `resend ${i} changes nothing`).toBe(sequence);
    }
    expect(await codeOf(send({ ...delta(sequence - 2), bids: [["1500.00", "1.0000"]] })), "a different update at an applied sequence").toBe("STALE_SEQUENCE");
    expect(await codeOf(send(snapshot(2, 10))), "a different snapshot at an applied sequence").toBe("STALE_SEQUENCE");
  });
});
