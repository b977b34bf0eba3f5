import { type BookMessage, LocalBook } from "./local-book.js";
import { type Clock, RECONNECT_BACKOFF, reconnectDelay, systemClock } from "./pacing.js";
import { MarketDataClient } from "./rest.js";
import {
  type BookTicker,
  canonicalStream,
  type Kline,
  type Prices,
  StreamError,
  type StreamOptions,
  type StreamState,
  type SubscribeOptions,
  type Ticker,
  type Trade,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./stream-types.js";

/** Client messages a second the client allows itself (the service closes a connection at its 11th). */
const MESSAGES_PER_SECOND = 8;
/** Names per subscribe message (the service's limit). */
const STREAMS_PER_MESSAGE = 50;
/** After asking a book for a new snapshot, ask again if none came within this time. */
const RESYNC_RETRY_MS = 5000;
const OPEN = 1;

interface Wanted {
  listeners: Set<(data: unknown) => void>;
  failures: Set<(error: StreamError) => void>;
  /** A moment the stream starts at (`from`), until the service says it is live (docs/streams.md#from-any-moment). */
  from?: number;
  /** Called once the stream is live: the catch-up from `from` is over. */
  live: Set<() => void>;
}

/**
 * One WebSocket connection to the service's streams, kept alive: subscribe and unsubscribe at
 * any time; after a lost connection it reconnects with jittered back-off and subscribes again to
 * everything wanted; a heartbeat watchdog replaces a connection that went silent. Data come as
 * listeners ({@link subscribe}) or typed async iterators ({@link ticker}, {@link trades} …), and
 * {@link book} keeps a {@link LocalBook} in sync (snapshot, deltas, sequence and checksum
 * checks, a resync on any gap).
 *
 * @example
 * const stream = new MarketStream({ baseUrl: "http://127.0.0.1:8787" });
 * for await (const ticker of stream.ticker("BTCUSDT")) console.log(ticker.lastPrice);
 */
export class MarketStream {
  state: StreamState = "connecting";
  /** The current connection (undefined between connections). */
  socket: WebSocketLike | undefined;
  /** Connections made after the first one. */
  reconnects = 0;
  /** Fresh snapshots asked for after a gap or checksum mismatch. */
  resyncs = 0;
  readonly client: MarketDataClient;
  private readonly options: StreamOptions;
  private readonly clock: Clock;
  private readonly WebSocketImpl: WebSocketConstructor;
  private readonly wanted = new Map<string, Wanted>();
  private readonly requests = new Map<number, { op: string; streams: string[] }>();
  private readonly stateListeners = new Set<(state: StreamState) => void>();
  /** The local books kept, by stream: their sequences ride on the next connection (`resume`). */
  private readonly books = new Map<string, LocalBook>();
  /** The sequences the current connection asked to resume from. */
  private resumeAsked = new Map<string, number>();
  private outbox: string[] = [];
  private sentAt: number[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private attempt = 0;
  private nextId = 1;
  private lastMessageAt = 0;
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private reopen: ReturnType<typeof setTimeout> | undefined;

  constructor(options: StreamOptions) {
    this.options = options;
    this.client = options.client ?? new MarketDataClient({ baseUrl: "", ...options });
    this.clock = options.clock ?? this.client.options.clock ?? systemClock;
    const WebSocketImpl = options.WebSocket ?? (globalThis as unknown as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WebSocketImpl) throw new TypeError('no WebSocket in this runtime: pass one (e.g. `import WebSocket from "ws"` on Node 20) as the WebSocket option');
    this.WebSocketImpl = WebSocketImpl;
    // After the caller's first subscriptions in the same turn, so the first connection names them (placement).
    queueMicrotask(() => void this.open());
  }

  /** Calls `listener` with each state change (`open`, `reconnecting`, …); returns a function that stops it. */
  onState(listener: (state: StreamState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /**
   * Subscribes to a stream by name (`ticker.BTCUSDT`, `book.ETHUSDT`, `prices.USDT`,
   * `kline.BTCUSDT.1m`, `heartbeat` …) and calls `listener` with each message's `data`; the
   * subscription survives reconnects. Returns the function that unsubscribes.
   */
  subscribe(stream: string, listener: (data: unknown) => void, onError?: (error: StreamError) => void, options: SubscribeOptions = {}): () => void {
    const name = canonicalStream(stream);
    let wanted = this.wanted.get(name);
    if (!wanted) {
      wanted = { listeners: new Set(), failures: new Set(), live: new Set(), ...(options.from !== undefined && { from: options.from }) };
      this.wanted.set(name, wanted);
      if (this.state === "open") this.request("subscribe", [name], options.from);
    }
    const entry = wanted;
    entry.listeners.add(listener);
    if (onError) entry.failures.add(onError);
    if (options.onLive) entry.live.add(options.onLive);
    return () => {
      entry.listeners.delete(listener);
      if (onError) entry.failures.delete(onError);
      if (options.onLive) entry.live.delete(options.onLive);
      if (entry.listeners.size === 0 && this.wanted.get(name) === entry) {
        this.wanted.delete(name);
        if (this.state === "open") this.request("unsubscribe", [name]);
      }
    };
  }

  /**
   * The stream's messages as an async iterator; leaving the loop unsubscribes. A consumer slower
   * than the stream finds at most `buffer` messages waiting (the oldest are dropped beyond that).
   */
  iterate<T>(stream: string, buffer = 1000): AsyncIterableIterator<T> {
    const queue: T[] = [];
    let wake: (() => void) | undefined;
    let failure: StreamError | undefined;
    let done = false;
    const stopWatching = this.onState((state) => state === "closed" && wake?.());
    const subscription = this.subscribe(
      stream,
      (data) => {
        for (const item of Array.isArray(data) ? data : [data]) queue.push(item as T);
        if (queue.length > buffer) queue.splice(0, queue.length - buffer);
        wake?.();
      },
      (error) => {
        failure = error;
        wake?.();
      },
    );
    const unsubscribe = () => {
      subscription();
      stopWatching();
    };
    const iterator: AsyncIterableIterator<T> = {
      next: async () => {
        for (;;) {
          if (queue.length > 0) return { value: queue.shift()!, done: false };
          if (failure) {
            done = true;
            unsubscribe();
            throw failure;
          }
          if (done || this.state === "closed") return { value: undefined, done: true };
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      },
      return: async () => {
        done = true;
        unsubscribe();
        wake?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  ticker(symbol: string): AsyncIterableIterator<Ticker> {
    return this.iterate(`ticker.${symbol}`);
  }
  trades(symbol: string): AsyncIterableIterator<Trade> {
    return this.iterate(`trades.${symbol}`);
  }
  bookTicker(symbol: string): AsyncIterableIterator<BookTicker> {
    return this.iterate(`bookTicker.${symbol}`);
  }
  klines(symbol: string, interval: string): AsyncIterableIterator<Kline> {
    return this.iterate(`kline.${symbol}.${interval}`);
  }
  prices(quote: string): AsyncIterableIterator<Prices> {
    return this.iterate(`prices.${quote}`);
  }

  /**
   * Keeps a local order book of `symbol` in sync: replaced by each snapshot, continued by deltas
   * whose sequence and checksum are checked; on a gap, a mismatch or a reconnect it is marked
   * out of sync and a fresh snapshot is asked for (once, again after 5 s if none came).
   * `onUpdate` runs after each message applied, `onResync` when a new snapshot is asked for.
   * `inspect` sees each message before the book does and may change it or drop it (return
   * undefined): a way to simulate a lossy network. With `from`, the book starts as it stood then
   * and is brought, change by change, into live (`onLive` says when).
   */
  book(
    symbol: string,
    {
      onUpdate,
      onResync,
      inspect,
      from,
      onLive,
    }: {
      onUpdate?: (book: LocalBook) => void;
      onResync?: (book: LocalBook) => void;
      inspect?: (message: BookMessage, book: LocalBook) => BookMessage | undefined;
    } & SubscribeOptions = {},
  ): { book: LocalBook; close: () => void } {
    const stream = canonicalStream(`book.${symbol}`);
    const book = new LocalBook();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const resync = () => {
      this.resyncs += 1;
      // A fresh snapshot is the live stream's: the book no longer starts at `from`.
      const wanted = this.wanted.get(stream);
      if (wanted) delete wanted.from;
      onResync?.(book);
      this.request("unsubscribe", [stream]);
      this.request("subscribe", [stream]);
      clearTimeout(retry);
      retry = setTimeout(() => {
        if (!book.synced && this.state === "open") resync();
      }, RESYNC_RETRY_MS);
    };
    const unsubscribe = this.subscribe(
      stream,
      (data) => {
        const message = inspect ? inspect(data as BookMessage, book) : (data as BookMessage);
        if (!message) return;
        const result = book.apply(message);
        if (result === "gap") resync();
        else if (result === "applied") {
          if (message.type === "snapshot") clearTimeout(retry);
          onUpdate?.(book);
        }
      },
      undefined,
      { ...(from !== undefined && { from }), ...(onLive && { onLive }) },
    );
    const stopWatching = this.onState((state) => {
      if (state === "open") return;
      // The connection is gone: the next one continues the book from its sequence if the service still can, else sends a snapshot.
      book.suspend();
      clearTimeout(retry);
    });
    this.books.set(stream, book);
    return {
      book,
      close: () => {
        unsubscribe();
        clearTimeout(retry);
        stopWatching();
        if (this.books.get(stream) === book) this.books.delete(stream);
      },
    };
  }

  /** Drops the connection as a network failure would: the client reconnects and resubscribes. */
  reconnect(): void {
    const socket = this.socket;
    if (!socket) return;
    this.socket = undefined; // its close event is then ignored
    socket.close(4000, "reconnect");
    this.lost();
  }

  /** Closes the connection for good; iterators end. */
  close(): void {
    this.setState("closed");
    clearInterval(this.watchdog);
    clearInterval(this.keepalive);
    clearTimeout(this.flushTimer);
    clearTimeout(this.reopen);
    const socket = this.socket;
    this.socket = undefined;
    socket?.close(1000, "client closed");
  }

  private setState(state: StreamState): void {
    if (this.state === state || this.state === "closed") return;
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }

  /**
   * `ws(s)://…/api/ws`, or `/v1/ws` signed in the query (browsers cannot set headers on a
   * WebSocket); with the streams wanted named in `streams`, so the connection lands on a shard of
   * their markets' group (docs/streams.md#placement). They are subscribed by message too, for the acks.
   */
  private async url(): Promise<string> {
    const base = this.client.options.baseUrl.replace(/^http/, "ws");
    const signed = this.options.signed ?? Boolean(this.client.options.apiKey && this.client.options.secret);
    const named = [...this.wanted.keys()].slice(0, STREAMS_PER_MESSAGE);
    const query = new URLSearchParams(named.length > 0 ? { streams: named.join(",") } : {});
    // Streams still catching up start again from their moment (the service takes one `from` a connect: the earliest).
    const froms = named.map((name) => this.wanted.get(name)?.from).filter((from): from is number => from !== undefined);
    if (froms.length > 0) query.set("from", String(Math.min(...froms)));
    this.resumeAsked = new Map(
      [...this.books]
        .filter(([name, book]) => named.includes(name) && book.resumable && this.wanted.get(name)?.from === undefined)
        .map(([name, book]) => [name, book.sequence]),
    );
    if (this.resumeAsked.size > 0) query.set("resume", [...this.resumeAsked].map(([name, sequence]) => `${name}:${sequence}`).join(","));
    if (signed) {
      const headers = await this.client.signatureHeaders("GET", "/v1/ws");
      query.set("apiKey", headers["X-API-KEY"]!);
      query.set("timestamp", headers["X-TIMESTAMP"]!);
      query.set("signature", headers["X-SIGNATURE"]!);
    }
    const search = query.size > 0 ? `?${query.toString().replaceAll("%2C", ",").replaceAll("%3A", ":")}` : "";
    return `${base}${signed ? "/v1/ws" : "/api/ws"}${search}`;
  }

  private async open(): Promise<void> {
    if (this.state === "closed") return;
    let url: string;
    try {
      url = await this.url();
    } catch {
      this.lost();
      return;
    }
    if ((this.state as StreamState) === "closed") return; // closed while signing
    let socket: WebSocketLike;
    try {
      socket = new this.WebSocketImpl(url);
    } catch {
      this.lost(); // e.g. a base URL the runtime refuses: try again later rather than throw into nowhere
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      if (this.socket !== socket) return;
      this.lastMessageAt = this.clock.now();
      this.outbox = []; // what was queued is subsumed by subscribing to everything wanted now
      this.setState("open");
      const streams = [...this.wanted.keys()];
      if (this.heartbeatTimeoutMs() > 0 && !this.wanted.has("heartbeat")) streams.push("heartbeat");
      for (let i = 0; i < streams.length; i += STREAMS_PER_MESSAGE) this.request("subscribe", streams.slice(i, i + STREAMS_PER_MESSAGE));
      this.startTimers(socket);
    });
    socket.addEventListener("message", (event: { data: unknown }) => {
      if (this.socket !== socket) return;
      this.lastMessageAt = this.clock.now();
      if (typeof event.data !== "string" || event.data === "pong") return;
      let message: unknown;
      try {
        message = JSON.parse(event.data);
      } catch {
        return; // not a message of the protocol
      }
      this.dispatch(message as Parameters<MarketStream["dispatch"]>[0]);
    });
    socket.addEventListener("close", () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.lost();
    });
    socket.addEventListener("error", () => {}); // a close follows
  }

  private heartbeatTimeoutMs(): number {
    return this.options.heartbeatTimeoutMs ?? 15_000;
  }

  private startTimers(socket: WebSocketLike): void {
    clearInterval(this.watchdog);
    clearInterval(this.keepalive);
    const timeout = this.heartbeatTimeoutMs();
    if (timeout > 0) {
      this.watchdog = setInterval(
        () => {
          if (this.socket === socket && this.clock.now() - this.lastMessageAt > timeout) this.reconnect();
        },
        Math.max(100, timeout / 3),
      );
    }
    this.keepalive = setInterval(() => {
      if (this.socket === socket && socket.readyState === OPEN) socket.send("ping");
    }, this.options.keepaliveMs ?? 30_000);
  }

  private lost(): void {
    clearInterval(this.watchdog);
    clearInterval(this.keepalive);
    this.requests.clear();
    if (this.state === "closed") return;
    this.attempt += 1;
    this.setState("reconnecting");
    const delay = reconnectDelay(this.attempt, { ...RECONNECT_BACKOFF, random: Math.random, ...this.options.reconnect });
    clearTimeout(this.reopen);
    this.reopen = setTimeout(() => {
      this.reconnects += 1;
      void this.open();
    }, delay);
  }

  private dispatch(message: {
    id?: number | null;
    type?: string;
    stream?: string;
    /** A pause's: the next `more` names it. */
    token?: string;
    data?: unknown;
    result?: unknown;
    error?: { code: string; message: string };
  }): void {
    // A catch-up's window was read: ask for the next with the pause's token (docs/streams.md#from-any-moment).
    if (message.type === "paused") {
      this.send(JSON.stringify({ op: "more", token: message.token }));
      return;
    }
    if (message.type === "live" && typeof message.stream === "string") {
      const wanted = this.wanted.get(message.stream);
      if (!wanted) return;
      delete wanted.from;
      for (const listener of wanted.live) listener();
      return;
    }
    if (typeof message.stream === "string") {
      this.attempt = 0; // data flows: the next loss starts the back-off afresh
      const wanted = this.wanted.get(message.stream);
      if (wanted) for (const listener of wanted.listeners) listener(message.data);
      return;
    }
    // A connect's `from` before the market's history: its streams were subscribed live instead (by the acks' subscribes).
    if (message.id === null && message.error?.code === "HISTORY_NOT_KEPT") for (const wanted of this.wanted.values()) delete wanted.from;
    // The connect's own subscription (id null) says which books continue where they were.
    const resumed = (message.result as { resumed?: unknown } | undefined)?.resumed;
    if (Array.isArray(resumed))
      for (const name of resumed) {
        const sequence = this.resumeAsked.get(String(name));
        if (sequence !== undefined) this.books.get(String(name))?.resume(sequence);
      }
    if (typeof message.id !== "number") return;
    const request = this.requests.get(message.id);
    this.requests.delete(message.id);
    if (!request) return;
    if (message.result) this.attempt = 0;
    if (!message.error || request.op !== "subscribe") return;
    const { code, message: text } = message.error;
    if (code === "INTERNAL_ERROR") {
      // Not the stream's fault: ask again shortly for those still wanted.
      setTimeout(() => {
        const still = request.streams.filter((stream) => this.wanted.has(stream));
        if (still.length > 0 && this.state === "open") this.request("subscribe", still);
      }, 1000);
      return;
    }
    for (const stream of request.streams) {
      const wanted = this.wanted.get(stream);
      if (!wanted) continue;
      this.wanted.delete(stream);
      for (const failure of wanted.failures) failure(new StreamError(code, stream, text));
    }
  }

  /** Queues a client message, paced under the service's 10 messages a second. */
  private request(op: "subscribe" | "unsubscribe", streams: string[], from?: number): void {
    const id = this.nextId++;
    this.requests.set(id, { op, streams });
    this.send(JSON.stringify({ op, id, streams, ...(from !== undefined && { from }) }));
  }

  private send(text: string): void {
    this.outbox.push(text);
    this.flush();
  }

  private flush(): void {
    const socket = this.socket;
    if (!socket || socket.readyState !== OPEN) return;
    while (this.outbox.length > 0) {
      const now = this.clock.now();
      this.sentAt = this.sentAt.filter((at) => now - at < 1000);
      if (this.sentAt.length >= MESSAGES_PER_SECOND) {
        clearTimeout(this.flushTimer);
        this.flushTimer = setTimeout(() => this.flush(), 1000 - (now - this.sentAt[0]!) + 1);
        return;
      }
      this.sentAt.push(now);
      socket.send(this.outbox.shift()!);
    }
  }
}
