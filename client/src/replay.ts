import { type BookMessage, LocalBook } from "./local-book.js";
import type { Trade, WebSocketConstructor, WebSocketLike } from "./stream-types.js";

/** What a replay is asked for (docs/history.md#replay). */
export interface ReplayOptions {
  /** The service, as for the REST client: `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** `book.{SYMBOL}` and `trades.{SYMBOL}` names, up to 10. */
  streams: string[];
  /** Unix ms: the replay opens with the book as it stood then. */
  from: number;
  /** Unix ms: the last moment replayed (at most 24 h after `from`). */
  to: number;
  /** Times real time; 0 (the default here): as fast as the service sends. */
  speed?: number;
  WebSocket?: WebSocketConstructor;
  /** Each book message, after the stream's local book applied it. */
  onBook?: (symbol: string, book: LocalBook, message: BookMessage) => void;
  /** Each trades message (the trades of one 100 ms window). */
  onTrades?: (symbol: string, trades: Trade[]) => void;
}

/** The replay's last message. */
export interface ReplayEnded {
  type: "replayEnded";
  from: number;
  to: number;
  messages: number;
}

/**
 * Replays the past of some markets (`GET /api/replay`): each `book.{SYMBOL}` into a
 * {@link LocalBook} — the same code that follows a live stream, so a gap or a checksum that does
 * not match fails the replay — and the trades as they came. Resolves with the replay's end;
 * rejects when the connection closes before it, or the service refused the replay.
 *
 * @example
 * const books = new Map();
 * await replay({ baseUrl, streams: ["book.BTCUSDT"], from, to, onBook: (symbol, book) => books.set(symbol, book.bestBid()) });
 */
export function replay(options: ReplayOptions): Promise<ReplayEnded> {
  const WebSocketImpl = options.WebSocket ?? (globalThis as unknown as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (!WebSocketImpl) throw new TypeError('no WebSocket in this runtime: pass one (e.g. `import WebSocket from "ws"` on Node 20) as the WebSocket option');
  const url = new URL("/api/replay", options.baseUrl.replace(/^http/, "ws"));
  url.searchParams.set("streams", options.streams.join(","));
  url.searchParams.set("from", String(options.from));
  url.searchParams.set("to", String(options.to));
  url.searchParams.set("speed", String(options.speed ?? 0));
  const books = new Map<string, LocalBook>();
  return new Promise((resolve, reject) => {
    let ended: ReplayEnded | undefined;
    let failure: Error | undefined;
    const socket: WebSocketLike = new WebSocketImpl(url.toString());
    const fail = (error: Error) => {
      failure ??= error;
      socket.close(1000, "replay failed here");
    };
    socket.addEventListener("message", (event) => {
      if (failure) return;
      const { stream, data } = JSON.parse(String(event.data)) as { stream: string; data: unknown };
      if (stream === "replay") {
        // A window was read: the next is asked with the pause's token (docs/history.md#replay).
        const { type, token } = data as { type: string; token?: string };
        if (type === "paused") socket.send(JSON.stringify({ op: "more", token }));
        else ended = data as ReplayEnded;
        return;
      }
      const dot = stream.indexOf(".");
      const [kind, symbol] = [stream.slice(0, dot), stream.slice(dot + 1)];
      if (kind === "book") {
        const book = books.get(symbol) ?? new LocalBook();
        books.set(symbol, book);
        const message = data as BookMessage;
        const result = book.apply(message);
        if (result !== "applied") return fail(new Error(`${stream}: the replay's message at ${message.sequence} was ${result}`));
        options.onBook?.(symbol, book, message);
      } else if (kind === "trades") {
        options.onTrades?.(symbol, data as Trade[]);
      }
    });
    socket.addEventListener("close", (event) => {
      if (failure) reject(failure);
      else if (ended) resolve(ended);
      else reject(new Error(`the replay closed before its end (${event.code} ${event.reason ?? ""})`));
    });
    socket.addEventListener("error", () => {
      failure ??= new Error(`the replay at ${url.toString()} failed: refused, or the connection was lost`);
    });
  });
}
