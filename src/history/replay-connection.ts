import type { Context } from "hono";
import { openEdgeConnection } from "../access/edge-connection";
import { ByteWindow } from "../core/byte-window";
import { sleep } from "../core/cross-request-wait";
import { randomHex } from "../core/encoding";
import { problem } from "../core/problem";
import { msSetting } from "../core/settings";
import type { MarketConfig } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import { logFailure } from "../logs/log";
import { tradeWindows } from "../streams/conflation";
import { MAX_CONNECTIONS_PER_PRINCIPAL, POLICY_VIOLATION, streamFrame } from "../streams/protocol";
import { type ReplayBookMessage, replayTime } from "./book-replay";
import { bookPage, TRADES_PAGE, tradePage } from "./history-pages";

/** What a replay was asked for (validated by the route). */
export interface ReplayRequest {
  streams: { kind: "book" | "trades"; market: MarketConfig }[];
  from: number;
  to: number;
  /** Times real time; 0: as fast as the service sends. */
  speed: number;
}

/** A replay's longest span: its reads grow with what happened in it (docs/history.md#replay). */
export const MAX_REPLAY_SPAN_MS = 24 * 60 * 60 * 1000;
interface Timed {
  time: number;
  text: string;
}

/** One stream's messages in order, read a page at a time. */
interface Source {
  buffer: Timed[];
  more: (() => Promise<Timed[]>) | undefined;
}

function bookSource(env: Env, market: MarketConfig, from: number, to: number): Source {
  const stream = `book.${market.symbol}`;
  let after: number | undefined;
  let first = true;
  const source: Source = { buffer: [], more: undefined };
  const page = async (): Promise<Timed[]> => {
    const { page: result } = await bookPage(env, market, from, to, after);
    const messages = result.messages.map((data: ReplayBookMessage, i) => ({ time: replayTime(data, i, from, first), text: streamFrame(stream, data) }));
    first = false;
    after = result.next;
    source.more = result.next === undefined ? undefined : page;
    return messages;
  };
  source.more = page;
  return source;
}

function tradesSource(env: Env, market: MarketConfig, from: number, to: number): Source {
  const stream = `trades.${market.symbol}`;
  let fromId: number | undefined;
  const source: Source = { buffer: [], more: undefined };
  const page = async (): Promise<Timed[]> => {
    const trades = await tradePage(env, market, from, to, fromId);
    fromId = trades.length > 0 ? trades[trades.length - 1]!.tradeId + 1 : undefined;
    source.more = trades.length === TRADES_PAGE ? page : undefined;
    return tradeWindows(trades).map((window) => ({ time: window[0]!.time, text: streamFrame(stream, window) }));
  };
  source.more = page;
  return source;
}

/** The next message of all sources by time (a book message before trades of the same moment: the sources' order). */
async function next(sources: Source[]): Promise<Timed | undefined> {
  for (const source of sources) while (source.buffer.length === 0 && source.more) source.buffer.push(...(await source.more()));
  let best: Source | undefined;
  for (const source of sources) if (source.buffer.length > 0 && (!best || source.buffer[0]!.time < best.buffer[0]!.time)) best = source;
  return best?.buffer.shift();
}

/**
 * A replay sends at most this many bytes a second, whatever its speed (0 included): the runtime
 * does not say what a client has not read, so a client that stops reading makes the isolate hold
 * at most this much more a second, and never more than the replay's span.
 */
const REPLAY_BYTES_PER_SECOND = 2 * 1024 * 1024;
/**
 * A replay sends this much, then a `paused` message with a token, and goes on once the client
 * answers `{"op":"more","token":…}`: a window is earned by reading the last, so a client that
 * does not read makes the isolate hold one window at most.
 */
export const REPLAY_WINDOW_BYTES = 1024 * 1024;
/** A client that does not answer a pause within this long is not reading: its replay ends (1008). */
const REPLAY_READ_WAIT_MS = 60_000;

/**
 * The client's `more` for each pause: `paused(token)` waits for it, false once `ms` passed without.
 * Any other message, or one over 256 bytes, is ignored.
 */
function pauses(server: WebSocket) {
  let waiting: { token: string; resolve: (read: boolean) => void } | undefined;
  server.addEventListener("message", (event) => {
    if (!waiting || typeof event.data !== "string" || event.data.length > 256) return;
    try {
      const message = JSON.parse(event.data) as { op?: unknown; token?: unknown };
      if (message.op === "more" && message.token === waiting.token) waiting.resolve(true);
    } catch {
      // not JSON: ignored
    }
  });
  return (token: string, ms: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      waiting = {
        token,
        resolve: (read) => {
          clearTimeout(timer);
          waiting = undefined;
          resolve(read);
        },
      };
    });
}

/**
 * `GET /api/replay` (docs/history.md#replay): the messages a live subscriber got on the named
 * streams between `from` and `to`, from the book's history and the trades, paced at `speed`.
 * Held by this isolate, counted as one of the client address's five connections by a lease of its
 * guard (confirmed every 20 s, returned on close). Reads: one market call per book segment
 * (4,096 commits at most) and per 1,000 trades, each segment one R2 read once it is there.
 * The first pages are read before the upgrade (once the connection is counted), so what is not
 * kept is a 404, not a close.
 */
export async function replayUpgrade(c: Context<AppEnv>, request: ReplayRequest): Promise<Response> {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket")
    throw problem("VALIDATION_FAILED", "GET /api/replay is a WebSocket: connect with Upgrade: websocket");
  // The limit first: an address holding its five connections makes the markets read nothing.
  const connection = await openEdgeConnection(c);
  if (!connection) {
    throw problem(
      "STREAM_LIMIT",
      `at most ${MAX_CONNECTIONS_PER_PRINCIPAL} connections per client address, streams and replays together (docs/limits.md#stream-connections)`,
    );
  }
  const sources = request.streams.map(({ kind, market }) =>
    kind === "book" ? bookSource(c.env, market, request.from, request.to) : tradesSource(c.env, market, request.from, request.to),
  );
  try {
    for (const source of sources) if (source.more) source.buffer.push(...(await source.more()));
  } catch (error) {
    connection.end();
    throw error;
  }
  const { client, server } = connection;
  const paused = pauses(server);
  const readWaitMs = msSetting((c.env as unknown as { REPLAY_READ_WAIT_MS?: string }).REPLAY_READ_WAIT_MS, REPLAY_READ_WAIT_MS);
  const run = async () => {
    const started = Date.now();
    const paced = new ByteWindow(REPLAY_BYTES_PER_SECOND, 1_000);
    let sent = 0;
    let windowBytes = 0;
    try {
      for (let message = await next(sources); message && !connection.ended; message = await next(sources)) {
        if (request.speed > 0) {
          const due = started + (message.time - request.from) / request.speed - Date.now();
          if (due > 0) await sleep(due);
        }
        // At most REPLAY_BYTES_PER_SECOND, speed 0 too: what a client that stops reading makes the isolate hold grows no faster.
        const wait = paced.waitFor(message.text.length, Date.now());
        if (wait > 0) await sleep(wait);
        if (connection.ended) return;
        if (windowBytes >= REPLAY_WINDOW_BYTES) {
          const token = randomHex(8);
          server.send(JSON.stringify({ stream: "replay", data: { type: "paused", token, messages: sent } }));
          if (!(await paused(token, readWaitMs))) {
            if (!connection.ended) server.close(POLICY_VIOLATION, "the replay was not read: answer each paused with more");
            return;
          }
          windowBytes = 0;
        }
        paced.force(message.text.length, Date.now());
        server.send(message.text);
        windowBytes += message.text.length;
        sent += 1;
      }
      if (connection.ended) return;
      server.send(JSON.stringify({ stream: "replay", data: { type: "replayEnded", from: request.from, to: request.to, messages: sent } }));
      server.close(1000, "replay ended");
    } catch (error) {
      logFailure("replay failed", { error });
      if (!connection.ended) server.close(1011, "replay failed: read again from the last message's time");
    } finally {
      connection.end();
    }
  };
  c.executionCtx.waitUntil(run());
  return new Response(null, { status: 101, webSocket: client });
}
