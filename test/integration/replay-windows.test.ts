import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { REPLAY_WINDOW_BYTES } from "../../src/history/replay-connection";
import { ingest } from "../../src/market/ingest";
import { until } from "../support/poll";
import { openSocket } from "./streams-support";

/** Ten books of 4,000 levels a side (about 130 KB each as a message): more than a replay's window. */
async function bigHistory(symbol: string): Promise<{ from: number; to: number }> {
  const side = (from: number) => Array.from({ length: 4_000 }, (_, i) => [((from + i) / 1000).toFixed(3), "1.00"] as [string, string]);
  const from = Date.now() - 1;
  for (let sequence = 1; sequence <= 10; sequence++) {
    // Apart by more than the streams' 100 ms (the replay sends what live subscribers got: one book an interval).
    await new Promise((resolve) => setTimeout(resolve, 110));
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence, bids: side(100_000 + sequence * 5_000), asks: side(300_000 + sequence * 5_000) } });
  }
  return { from, to: Date.now() + 1 };
}

describe("a replay's windows (docs/history.md#replay)", () => {
  it(`pauses after each ${REPLAY_WINDOW_BYTES / 1024 / 1024} MiB until the client answers more with the pause's token; a client that does not is ended with 1008 (fails before: a silent client was sent everything and never ended)`, async () => {
    const { from, to } = await bigHistory("SOLUSDT");
    const path = `/api/replay?streams=book.SOLUSDT&from=${from}&to=${to}&speed=0`;

    const silent = await openSocket(path, "10.46.0.1");
    const closed = await silent.closed;
    expect([closed.code, closed.reason], "a client that never answers").toEqual([1008, "the replay was not read: answer each paused with more"]);
    const pause = silent.messages.find((m) => m.stream === "replay" && m.data.type === "paused");
    expect(pause?.data.token, "the pause's token").toMatch(/^[0-9a-f]{16}$/);
    const sentBefore = silent.messages.slice(0, silent.messages.indexOf(pause)).reduce((n, m) => n + JSON.stringify(m).length, 0);
    expect(sentBefore, "one window, and at most the message that crossed it").toBeLessThan(REPLAY_WINDOW_BYTES + 200_000);
    expect(silent.messages.at(-1), "nothing after the pause").toBe(pause);

    const reading = await openSocket(path, "10.46.0.2");
    let answered = 0;
    await until(
      () => {
        const pauses = reading.messages.filter((m) => m.stream === "replay" && m.data.type === "paused");
        for (const p of pauses.slice(answered)) reading.ws.send(JSON.stringify({ op: "more", token: p.data.token }));
        answered = pauses.length;
        return reading.messages.some((m) => m.data?.type === "replayEnded") || undefined;
      },
      { what: "the replay's end" },
    );
    expect((await reading.closed).code, "a reading client's replay ends normally").toBe(1000);
    expect(reading.messages.filter((m) => m.stream === "book.SOLUSDT").length, "every book replayed").toBeGreaterThanOrEqual(10);
  });
});
