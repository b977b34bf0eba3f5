import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ProblemError } from "../../src/core/problem";
import { ingest } from "../../src/market/ingest";
import { MarketEngine } from "../../src/market/market-engine";
import type { MarketObject } from "../../src/market/market-object";
import type { IngestBody } from "../../src/market/schemas";
import { ensureRegistry } from "../../src/registry/copy";
import { COMMIT_MAX_BYTES } from "../../src/writes/group-writer";
import { until } from "../support/poll";
import { hostOf } from "../support/registry";

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** Makes the next `commitStaged` of `symbol` throw, once. */
function failOnce(symbol: string): void {
  const prototype = MarketEngine.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const original = prototype.commitStaged!;
  let failed = false;
  prototype.commitStaged = function (this: { state?: { market: { symbol: string } } }, ...args: unknown[]) {
    if (!failed && this.state?.market.symbol === symbol) {
      failed = true;
      throw new Error(`injected commit fault of ${symbol}`);
    }
    return original.apply(this, args);
  };
  restore.push(() => {
    prototype.commitStaged = original;
  });
}

const T0 = Date.now();
/** 1,000 trades of 64-character ids: about 127 KB of a commit's row, so eight pass COMMIT_MAX_BYTES. */
function bigBatch(b: number): IngestBody {
  const trades = Array.from({ length: 1000 }, (_, i) => ({
    id: `room-${b}-${i}-`.padEnd(64, "x"),
    price: "60000.00",
    quantity: "0.00100",
    side: "buy" as const,
    time: T0 + b,
  }));
  return { symbol: "BTCUSDT", trades };
}

/** A batch's answer: its trades taken and duplicated, or the problem's code. */
async function send(body: IngestBody): Promise<string> {
  try {
    const answer = await ingest(env, "*", body);
    return `accepted ${answer.acceptedTrades}, duplicate ${answer.duplicateTrades}`;
  } catch (error) {
    if (error instanceof ProblemError) return error.code;
    throw error;
  }
}

describe("a commit made to make room for a batch (docs/design.md#isolation)", () => {
  it("when it drops the batch's own market, the batch is refused, not acknowledged: every batch acknowledged is durable (fails before: the batch was answered applied and never written)", async () => {
    await ensureRegistry(env);
    const host = await hostOf("BTCUSDT");
    // A commit now, so the next batches wait for a tick that only the test ends.
    expect(await send(bigBatch(0)), "the first batch").toBe("accepted 1000, duplicate 0");
    await runInDurableObject(host, (instance: MarketObject) => {
      instance.tickMs = 600_000;
    });
    failOnce("BTCUSDT");
    const count = Math.ceil(COMMIT_MAX_BYTES / 127_000) + 1;
    const settled: string[] = [];
    const answers = Array.from({ length: count }, (_, i) =>
      send(bigBatch(i + 1)).then((answer) => {
        settled.push(answer);
        return answer;
      }),
    );
    // The batch that passes the row's bound commits those before it, which fail with the market.
    await until(() => (settled.length >= count - 2 ? true : undefined), { what: "the answers of the commit made for room" });
    await runInDurableObject(host, (instance: MarketObject) => instance.writer.tick.commitNow());
    const all = await Promise.all(answers);
    expect(all.filter((a) => a === "MARKET_UNAVAILABLE").length, "batches refused with the failed commit").toBeGreaterThanOrEqual(count - 2);
    for (const undo of restore.splice(0)) undo();
    // From storage: each batch acknowledged is there whole (its resend all duplicates); each refused is not.
    await evictDurableObject(host);
    for (const [i, answer] of all.entries()) {
      const again = await send(bigBatch(i + 1));
      expect(again, `batch ${i + 1} resent after a restart (first answered ${answer})`).toBe(
        answer === "MARKET_UNAVAILABLE" ? "accepted 1000, duplicate 0" : "accepted 0, duplicate 1000",
      );
    }
  });
});
