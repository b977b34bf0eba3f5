import { introspectWorkflowInstance, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { metricsObject } from "../../src/core/object-ids";
import { HOUR_MS, MINUTE_MS } from "../../src/domain/intervals";
import { BOOK_FILES_AFTER_MS, hourlyKey } from "../../src/history/book-files";
import { type BookHourOutput, bookHourId } from "../../src/history/book-files-workflow";
import { segmentKey } from "../../src/history/book-history";
import { againId, FILE_ROUNDS } from "../../src/history/file-workflows";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import type { RecentTimes } from "../../src/metrics/metrics-object";
import { ensureRegistry } from "../../src/registry/copy";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";
import { unzip } from "../support/zip";

type Uploads = { bookHistory: { upload(symbol: string): Promise<number> } };
const SYMBOL = "SOLBTC";
/**
 * Four hours, each with batches: A, B, C and D — two days ahead of the real clock, so the market's
 * alarm (which the runtime fires by that clock) never comes due during the test: only the test's
 * own `closeBookHours` hands the hours on, after it lost A's segment (an alarm due at once raced it).
 */
const A = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + 48 * HOUR_MS;
/** `YYYY-MM-DD-HH`, as the operator names an hour. */
const hourName = (hour: number) => new Date(hour).toISOString().slice(0, 13).replace("T", "-");

/** Batch `sequence` (SOLBTC: prices at 7 decimals, quantities at 2), applied at the clock's moment. */
async function publish(sequence: number): Promise<void> {
  const level = (units: number) => (units / 1e7).toFixed(7);
  const book = {
    type: sequence === 1 ? "snapshot" : "delta",
    sequence,
    bids: [[level(2_000 - sequence), "1.00"]],
    asks: [[level(3_000 + sequence), "2.00"]],
  } as const;
  expect((await ingest(env, "*", { symbol: SYMBOL, book: book as never })).book, `batch ${sequence}`).toBe("applied");
}

describe("an hour's book files are built by a Workflow, off the market's host (docs/history.md#book-files)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the host hands each closed hour on and waits for none: a broken hour (its segment lost) fails alone, reported, and the next hour's files are built", async () => {
    await ensureRegistry(env);
    // The instances of the four hours, watched from the start: the market's alarm (due in the past, by
    // the batches' clock) may hand the hours on before the call below does.
    const hours = [A, A + HOUR_MS, A + 2 * HOUR_MS, A + 3 * HOUR_MS];
    const instances = await Promise.all(hours.map((hour) => introspectWorkflowInstance(env.BOOK_FILES, bookHourId(SYMBOL, hour))));
    for (const instance of instances) {
      await instance.modify(async (m) => {
        await m.disableSleeps();
        await m.disableRetryDelays();
      });
    }
    // Three batches in each of the hours A, B and C, one in D: the first commit of an hour closes the segment.
    let sequence = 0;
    for (const hour of [0, 1, 2, 3]) {
      vi.useFakeTimers({ toFake: ["Date"], now: A + hour * HOUR_MS + 5 * MINUTE_MS });
      for (let n = 0; n < (hour === 3 ? 1 : 3); n++) {
        vi.setSystemTime(A + hour * HOUR_MS + (5 + n) * MINUTE_MS);
        await publish(++sequence);
      }
    }
    vi.useRealTimers();
    const host = await hostOf(SYMBOL);
    await runInDurableObject(host, (object: MarketObject) => (object.engine(SYMBOL) as unknown as Uploads).bookHistory.upload(SYMBOL));
    const segments = (await env.HISTORY.list({ prefix: `book-history/${SYMBOL}/` })).objects.map((o) => o.key);
    // A's batches and B's first (base 0), B's and C's first (base 4), C's and D's (base 7).
    expect(segments, "a segment closed at each hour's first commit").toEqual([segmentKey(SYMBOL, 0), segmentKey(SYMBOL, 4), segmentKey(SYMBOL, 7)]);

    // The segment A and B begin from is lost: both hours fail; C reads only the later two.
    const lostObject = (await env.HISTORY.get(segments[0]!))!;
    const lost = { bytes: await lostObject.arrayBuffer(), customMetadata: lostObject.customMetadata! };
    await env.HISTORY.delete(segments[0]!);
    await runInDurableObject(host, (object: MarketObject) => object.closeBookHours(SYMBOL, A + 4 * HOUR_MS + BOOK_FILES_AFTER_MS + MINUTE_MS));
    const record = await runInDurableObject(host, (object: MarketObject) =>
      (object.engine(SYMBOL) as unknown as { store: { bookHoursFrom(): number } }).store.bookHoursFrom(),
    );
    expect(record, "every closed hour handed on, none waited for").toBe(0);
    const [a, b, c, d] = instances;
    await c!.waitForStatus("complete");
    await d!.waitForStatus("complete");
    expect(((await c!.getOutput()) as BookHourOutput).written, "C's files written while A and B fail").toBe(true);
    await a!.waitForStatus("errored");
    await b!.waitForStatus("errored");
    expect((await a!.getError()).message, "why A failed").toMatch(/not in R2/);

    // C's book file: the book as C began (after B's last batch), then C's three batches.
    const file = await unzip(new Uint8Array(await (await env.HISTORY.get(hourlyKey("book", SYMBOL, A + 2 * HOUR_MS)))!.arrayBuffer()));
    const rows = file.text.trimEnd().split("\n");
    // Each batch set a new level each side: the book at 6 holds six a side.
    const opening = Array.from({ length: 12 }, () => "6");
    expect(
      rows.map((row) => row.split(",")[0]),
      "the rows' sequences: C's opening snapshot, then 7, 8, 9",
    ).toEqual([...opening, "7", "7", "8", "8", "9", "9"]);
    expect(
      rows.slice(12).map((row) => row.split(",").slice(2).join(",")),
      "C's level changes",
    ).toEqual([
      "bid,0.0001993,1.00,delta",
      "ask,0.0003007,2.00,delta",
      "bid,0.0001992,1.00,delta",
      "ask,0.0003008,2.00,delta",
      "bid,0.0001991,1.00,delta",
      "ask,0.0003009,2.00,delta",
    ]);
    expect(await env.HISTORY.head(`${hourlyKey("book", SYMBOL, A)}.CHECKSUM`), "no file for A").toBeNull();

    // Reported: counted, and listed on the status page until built.
    const recent = (await metricsObject(env).recentTimes()) as RecentTimes;
    expect(recent.failingFiles.map((f) => f.id).sort(), "the failing hours listed").toEqual([bookHourId(SYMBOL, A), bookHourId(SYMBOL, A + HOUR_MS)]);
    const { counters } = await metricsObject(env).totalsNow();
    expect(counters['mds_history_files_total{kind="book",result="failed"}'], "each round of each failing hour counted").toBe(2 * FILE_ROUNDS);
    expect(counters['mds_history_files_total{kind="book",result="written"}'], "C and D counted written").toBe(2);

    // The segment back, the operator builds A again (POST /admin/markets/{pair}/history/book-files/{hour}): built and unlisted.
    await env.HISTORY.put(segments[0]!, lost.bytes, { customMetadata: lost.customMetadata });
    const rebuild = (hour: string) =>
      callJson<{ id: string; code: string }>(`/admin/markets/${SYMBOL}/history/book-files/${hour}`, { method: "POST", headers: ADMIN });
    expect((await rebuild(hourName(A - HOUR_MS))).status, "an hour without an instance").toBe(404);
    expect((await rebuild(`${hourName(A).slice(0, 10)}-24`)).status, "not an hour").toBe(400);
    const rebuilt = await rebuild(hourName(A));
    expect([rebuilt.status, rebuilt.body.id], "A restarted").toEqual([200, bookHourId(SYMBOL, A)]);
    const restarted = await env.BOOK_FILES.get(bookHourId(SYMBOL, A));
    await until(async () => (await restarted.status()).status === "complete", { what: "A complete after its restart", timeoutMs: 30_000 });
    expect(await env.HISTORY.head(`${hourlyKey("book", SYMBOL, A)}.CHECKSUM`), "A's files, after the restart").not.toBeNull();
    const after = (await metricsObject(env).recentTimes()) as RecentTimes;
    expect(
      after.failingFiles.map((f) => f.id),
      "only B still failing",
    ).toEqual([bookHourId(SYMBOL, A + HOUR_MS)]);
    for (const instance of instances) await instance.dispose();
  }, 120_000);

  it("an hour's files are kept 30 days: an older hour asked for is built again from its segments (404 with Retry-After meanwhile), an hour without a change is not", async () => {
    await ensureRegistry(env);
    const symbol = "ETHBTC"; // prices at 5 decimals, quantities at 4
    const now = Date.now();
    const P = Math.floor(now / HOUR_MS) * HOUR_MS - 40 * 24 * HOUR_MS;
    const first = await introspectWorkflowInstance(env.BOOK_FILES, bookHourId(symbol, P));
    const again = await introspectWorkflowInstance(env.BOOK_FILES, againId(bookHourId(symbol, P), now));
    for (const instance of [first, again]) {
      await instance.modify(async (m) => {
        await m.disableSleeps();
        await m.disableRetryDelays();
      });
    }
    // Three batches in hour P, forty days ago; a fourth an hour on closes the segment holding P.
    for (const [sequence, at] of [
      [1, P + 5 * MINUTE_MS],
      [2, P + 6 * MINUTE_MS],
      [3, P + 7 * MINUTE_MS],
      [4, P + HOUR_MS + 10 * MINUTE_MS],
    ] as const) {
      vi.useFakeTimers({ toFake: ["Date"], now: at });
      const book = { type: sequence === 1 ? "snapshot" : "delta", sequence, bids: [[(0.02 - sequence / 1e5).toFixed(5), "1.0000"]], asks: [] };
      expect((await ingest(env, "*", { symbol, book: book as never })).book, `batch ${sequence}`).toBe("applied");
    }
    vi.useRealTimers();
    const host = await hostOf(symbol);
    await runInDurableObject(host, (object: MarketObject) => (object.engine(symbol) as unknown as Uploads).bookHistory.upload(symbol));
    await runInDurableObject(host, (object: MarketObject) => object.closeBookHours(symbol, Date.now()));
    await first.waitForStatus("complete");
    const path = `/data/spot/hourly/book/${symbol}/${symbol}-book-${hourName(P)}.zip`;
    const written = await call(path);
    expect(written.status, "P's book file, written when the hour closed").toBe(200);
    const bytes = new Uint8Array(await written.arrayBuffer());

    // Thirty days on, the lifecycle rule deletes the hour's files (here, by hand).
    for (const kind of ["book", "bookTicker"] as const) {
      await env.HISTORY.delete([hourlyKey(kind, symbol, P), `${hourlyKey(kind, symbol, P)}.CHECKSUM`]);
    }
    const expired = await call(path);
    expect(expired.status, "an expired hour: not there yet").toBe(404);
    expect(expired.headers.get("Retry-After"), "told when to ask again").toBe("60");
    expect(((await expired.json()) as { detail: string }).detail).toMatch(/is being built .*kept 30 days/);
    await again.waitForStatus("complete");
    const rebuilt = await call(path);
    expect(rebuilt.status, "built again from the hour's segments").toBe(200);
    expect(new Uint8Array(await rebuilt.arrayBuffer()), "the same bytes as the first time").toEqual(bytes);
    expect((await call(`${path.replace(/\.zip$/, "")}.zip.CHECKSUM`)).status, "its checksum too").toBe(200);

    // An old hour the book did not change in: 404 at once when no segment holds it, nothing built;
    // when the segment of a quiet book spans it, after the week's instance found no batch in it.
    // A younger hour not written is the host's to hand on: 404, nothing built.
    const ask = async (hour: number, why: RegExp, wait: string | null) => {
      const answer = await call(`/data/spot/hourly/book/${symbol}/${symbol}-book-${hourName(hour)}.zip`);
      const { detail } = (await answer.json()) as { detail: string };
      expect([answer.status, answer.headers.get("Retry-After")], `${hourName(hour)} (${detail})`).toEqual([404, wait]);
      expect(detail, hourName(hour)).toMatch(why);
    };
    const spanned = P - 2 * HOUR_MS;
    const quiet = await introspectWorkflowInstance(env.BOOK_FILES, againId(bookHourId(symbol, spanned), now));
    await ask(spanned, /is being built/, "60");
    await quiet.waitForStatus("complete");
    await ask(spanned, /the book did not change in that hour/, null);
    for (const hour of [P + 3 * HOUR_MS, Math.floor(now / HOUR_MS) * HOUR_MS - 48 * HOUR_MS]) {
      await ask(hour, hour > P + 3 * HOUR_MS ? /has not been written/ : /the book did not change in that hour/, null);
      await expect(env.BOOK_FILES.get(againId(bookHourId(symbol, hour), now)), `no instance for ${hourName(hour)}`).rejects.toThrow();
    }
    await quiet.dispose();
    await first.dispose();
    await again.dispose();
  }, 120_000);
});
