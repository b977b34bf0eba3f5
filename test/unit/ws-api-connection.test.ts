import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_REQUEST_BYTES, type RequestId } from "../../src/binance/ws-api";
import { MAX_FRAMES_PER_SECOND, MAX_WAITING_REQUESTS, WsApiConnection } from "../../src/binance/ws-api-connection";
import { ByteWindow } from "../../src/core/byte-window";

/**
 * One WebSocket API connection's queue (src/binance/ws-api-connection.ts) against a plain model of
 * docs/binance.md#websocket-api: answers in the requests' order, 10 frames a second, at most 50
 * requests waiting (one more refused at once, -1003), and a request whose answer fails is 503 -1001
 * with the queue going on. The REST dialect is a function the test answers when it chooses, so a
 * market slower than five seconds an answer — the only way 50 can wait — is a command, not a wait.
 */

const T0 = Date.UTC(2026, 11, 7, 12);

type Kind = "ping" | "notJson" | "unknown" | "binary" | "oversize";
type Command = { type: "frame"; kind: Kind; advance: number } | { type: "answer"; ok: boolean } | { type: "end" };
type Out = { id: RequestId; status: number; code?: number };

/** A frame of each kind; `n` is its id where it has one. */
function frameOf(kind: Kind, n: number): string | ArrayBuffer {
  if (kind === "ping") return JSON.stringify({ id: n, method: "ping" });
  if (kind === "unknown") return JSON.stringify({ id: n, method: "order.place" });
  if (kind === "notJson") return "not json";
  if (kind === "binary") return new ArrayBuffer(8);
  return JSON.stringify({ id: n, method: "ping", params: { pad: "x".repeat(MAX_REQUEST_BYTES) } });
}

/** The rules, plainly: what the client is sent, in order, and how many requests reached the REST dialect. */
class Model {
  now = T0;
  readonly sent: Out[] = [];
  dispatched = 0;
  private admitted: number[] = [];
  private readonly queue: { request: boolean; id: RequestId; out?: Out; asked?: boolean }[] = [];
  private ended = false;

  private emit(out: Out): void {
    if (!this.ended) this.sent.push(out);
  }

  /** Runs the queue up to the first request waiting for the REST dialect. */
  private run(): void {
    for (let head = this.queue[0]; head; head = this.queue[0]) {
      if (head.request) {
        if (!head.asked) {
          head.asked = true;
          this.dispatched += 1;
        }
        return;
      }
      this.emit(head.out!);
      this.queue.shift();
    }
  }

  frame(kind: Kind, n: number, advance: number): void {
    this.now += advance;
    const idInText = kind === "ping" || kind === "unknown" ? n : null;
    this.admitted = this.admitted.filter((at) => at + 1000 > this.now);
    let refusal: Out | undefined;
    if (this.admitted.length >= MAX_FRAMES_PER_SECOND) refusal = { id: idInText, status: 429, code: -1003 };
    else {
      this.admitted.push(this.now);
      if (kind === "binary" || kind === "oversize") refusal = { id: null, status: 400, code: -1100 };
      else if (this.queue.length >= MAX_WAITING_REQUESTS) refusal = { id: idInText, status: 429, code: -1003 };
    }
    if (refusal && this.queue.length >= MAX_WAITING_REQUESTS) {
      this.emit(refusal);
      return;
    }
    if (refusal) this.queue.push({ request: false, id: refusal.id, out: refusal });
    else if (kind === "ping") this.queue.push({ request: true, id: n });
    else if (kind === "notJson") this.queue.push({ request: false, id: null, out: { id: null, status: 400, code: -1100 } });
    else this.queue.push({ request: false, id: n, out: { id: n, status: 400, code: -1020 } });
    this.run();
  }

  /** The waiting request's answer comes (false: there is none waiting). */
  answer(ok: boolean): boolean {
    const head = this.queue[0];
    if (!head?.request || !head.asked) return false;
    this.emit(ok ? { id: head.id, status: 200 } : { id: head.id, status: 503, code: -1001 });
    this.queue.shift();
    this.run();
    return true;
  }

  end(): void {
    this.ended = true;
  }
}

/** The real connection over a real socket, its REST dialect answered by the test. */
function realConnection() {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  client.accept();
  const sent: string[] = [];
  const socket = {
    send: (text: string) => {
      sent.push(text);
      server.send(text);
    },
  } as unknown as WebSocket;
  const asked: { path: string; resolve: (r: Response) => void; reject: (e: Error) => void }[] = [];
  const connection = { ended: false };
  const api = new WsApiConnection(
    socket,
    connection,
    (request) => new Promise((resolve, reject) => asked.push({ path: new URL(request.url).pathname, resolve, reject })),
    new ByteWindow(1 << 30, 60_000),
    1 << 30,
    {
      origin: "https://venue.test",
      address: "198.18.90.1",
      rateLimitsByDefault: false,
      limits: [],
    },
  );
  return { api, sent, asked, connection };
}

/** Lets the connection's queue run until it has sent `frames` and asked `asks` (a bounded number of turns: it never waits for time). */
async function settle(real: ReturnType<typeof realConnection>, frames: number, asks: number): Promise<void> {
  for (let turn = 0; turn < 200 && (real.sent.length < frames || real.asked.length < asks); turn++) await new Promise((resolve) => setTimeout(resolve, 0));
  await new Promise((resolve) => setTimeout(resolve, 0));
}

const outOf = (text: string): Out => {
  const frame = JSON.parse(text) as { id: RequestId; status: number; error?: { code: number } };
  return frame.error ? { id: frame.id, status: frame.status, code: frame.error.code } : { id: frame.id, status: frame.status };
};

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** The failures' log lines, kept out of the test's output. */
const failuresLogged = () => vi.spyOn(console, "error").mockImplementation(() => {});

describe("a WebSocket API connection's queue (src/binance/ws-api-connection.ts)", () => {
  it(`holds at most ${MAX_WAITING_REQUESTS} requests waiting behind a slow market: the ${MAX_WAITING_REQUESTS + 1}st is refused at once (429 -1003), the 50 are answered in order when the market answers, and the places come back`, async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: T0 });
    const real = realConnection();
    for (let n = 1; n <= 60; n++) {
      if (n > 1 && (n - 1) % MAX_FRAMES_PER_SECOND === 0) vi.setSystemTime(Date.now() + 1000);
      real.api.take(frameOf("ping", n));
    }
    await settle(real, 10, 1);
    expect(real.asked.length, "the market is asked one request at a time").toBe(1);
    expect(real.sent.map(outOf), "refused at once: the frames past 50 waiting").toEqual(
      Array.from({ length: 10 }, (_, i) => ({ id: 51 + i, status: 429, code: -1003 })),
    );
    expect(real.sent[0], "the refusal says why").toMatch(/More than 50 requests wait/);
    for (let answered = 0; answered < MAX_WAITING_REQUESTS; answered++) {
      await settle(real, 10 + answered, answered + 1);
      real.asked[answered]!.resolve(new Response("{}", { headers: { "Content-Type": "application/json" } }));
    }
    await settle(real, 60, MAX_WAITING_REQUESTS);
    expect(real.sent.slice(10).map(outOf), "the 50 answers, in the requests' order").toEqual(
      Array.from({ length: 50 }, (_, i) => ({ id: 1 + i, status: 200 })),
    );
    vi.setSystemTime(Date.now() + 1000);
    real.api.take(frameOf("ping", 61));
    await settle(real, 60, 51);
    expect(real.asked.length, "a request after the queue emptied reaches the market").toBe(51);
  });

  it("answers a request whose answer failed 503 -1001 with its id, and answers the next", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: T0 });
    const logged = failuresLogged();
    const real = realConnection();
    real.api.take(frameOf("ping", 1));
    real.api.take(frameOf("ping", 2));
    await settle(real, 0, 1);
    real.asked[0]!.reject(new Error("the market's host is down (test)"));
    await settle(real, 1, 2);
    real.asked[1]!.resolve(new Response("{}", { headers: { "Content-Type": "application/json" } }));
    await settle(real, 2, 2);
    expect(real.sent.map(outOf)).toEqual([
      { id: 1, status: 503, code: -1001 },
      { id: 2, status: 200 },
    ]);
    expect(real.asked.map((a) => a.path)).toEqual(["/binance/api/v3/ping", "/binance/api/v3/ping"]);
    expect(
      logged.mock.calls.map(([line]) => JSON.parse(String(line)).message),
      "the failure is logged",
    ).toEqual(["ws-api request failed"]);
  });

  it("any sequence of frames, answers and failures: the client is sent what the model says, in its order", async () => {
    const kind = fc.constantFrom<Kind>("ping", "ping", "ping", "ping", "notJson", "unknown", "binary", "oversize");
    const frame = fc.record({ type: fc.constant("frame" as const), kind, advance: fc.constantFrom(0, 0, 50, 100, 400, 1000) });
    const answer = fc.record({ type: fc.constant("answer" as const), ok: fc.boolean() });
    // A market that never answers in some runs, so the queue fills; the connection ends in some, once.
    const run = fc
      .record({ answers: fc.constantFrom(0, 1, 4), length: fc.integer({ min: 1, max: 160 }), endAt: fc.option(fc.nat(160), { freq: 3 }) })
      .chain(({ answers, length, endAt }) =>
        fc
          .array(answers === 0 ? frame : fc.oneof({ weight: 12, arbitrary: frame }, { weight: answers, arbitrary: answer }), {
            minLength: length,
            maxLength: length,
          })
          .map((commands): Command[] => (endAt === null ? commands : [...commands.slice(0, endAt), { type: "end" }, ...commands.slice(endAt)])),
      );
    failuresLogged();
    await fc.assert(
      fc.asyncProperty(run, async (commands) => {
        vi.useFakeTimers({ toFake: ["Date"], now: T0 });
        try {
          const model = new Model();
          const real = realConnection();
          let n = 0;
          for (const [step, c] of commands.entries()) {
            if (c.type === "frame") {
              n += 1;
              model.frame(c.kind, n, c.advance);
              vi.setSystemTime(model.now);
              real.api.take(frameOf(c.kind, n));
            } else if (c.type === "answer") {
              const waiting = real.asked.at(-1);
              if (model.answer(c.ok)) {
                if (c.ok) waiting!.resolve(new Response("{}", { headers: { "Content-Type": "application/json" } }));
                else waiting!.reject(new Error("the market's host is down (test)"));
              }
            } else {
              model.end();
              real.connection.ended = true;
            }
            await settle(real, model.sent.length, model.dispatched);
            expect(real.asked.length, `step ${step} (${JSON.stringify(c)}): requests asked of the REST dialect`).toBe(model.dispatched);
            expect(real.sent.map(outOf), `step ${step} (${JSON.stringify(c)}): what the client was sent`).toEqual(model.sent);
          }
        } finally {
          vi.useRealTimers();
        }
      }),
      { numRuns: 60 },
    );
  });
});
