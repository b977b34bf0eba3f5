import { DurableObject } from "cloudflare:workers";
import { problem, problemResponse } from "../core/problem";
import type { Env } from "../env";
import {
  MAX_CONNECTIONS_PER_PRINCIPAL,
  MAX_MESSAGE_BYTES,
  MAX_MESSAGES_PER_SECOND,
  MAX_STREAMS_PER_CONNECTION,
  MAX_WARNINGS,
  parseClientMessage,
  parseStreamName,
  POLICY_VIOLATION,
  type StreamName,
} from "./protocol";
import { WireBook, type BookMessage } from "./wire-book";

/** One message for subscribers of `stream`, as a market or the price index publishes it. */
export interface StreamEvent {
  stream: string;
  data: unknown;
}

interface Attachment {
  principal: string;
  streams: string[];
  warnings: number;
}

export const PRINCIPAL_HEADER = "X-Stream-Principal";
export const SHARD_HEADER = "X-Stream-Shard";
/** The book snapshot a subscriber gets first (contract 6). */
const SNAPSHOT_DEPTH = 100;

/** Markets and quotes publish to shards; this names what a shard registered for. */
function sourceOf(stream: StreamName): string {
  return stream.kind === "prices" ? `prices:${stream.subject}` : `market:${stream.subject}`;
}

/**
 * One shard of the WebSocket fan-out. All connections of a principal land on one shard, so
 * the 5-connection limit is an exact count of this shard's sockets tagged with it. Sockets
 * hibernate; a socket's subscriptions live in its attachment, and everything in memory here
 * is rebuilt from those after a wake-up.
 */
export class StreamHub extends DurableObject<Env> {
  private readonly subscribers = new Map<string, Set<WebSocket>>();
  private readonly books = new Map<string, WireBook>();
  /** Book messages that arrived while the shard was fetching the base snapshot. */
  private readonly pendingBooks = new Map<string, BookMessage[]>();
  private readonly registrations = new Map<string, Promise<void>>();
  private readonly inbound = new Map<WebSocket, number[]>();
  private readonly releasing = new Set<string>();
  private shardName: string | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A bare ping is answered by the runtime without waking the shard.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('{"op":"ping"}', '{"op":"pong"}'));
    for (const ws of ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment | null;
      for (const stream of attachment?.streams ?? []) this.subscribersOf(stream).add(ws);
    }
  }

  private subscribersOf(stream: string): Set<WebSocket> {
    let set = this.subscribers.get(stream);
    if (!set) this.subscribers.set(stream, (set = new Set()));
    return set;
  }

  private async shard(): Promise<string> {
    this.shardName ??= (await this.ctx.storage.get<string>("shard")) ?? "shard-0";
    return this.shardName;
  }

  /** Upgrades a connection, or refuses a sixth one of the same principal before the upgrade. */
  override async fetch(request: Request): Promise<Response> {
    const principal = request.headers.get(PRINCIPAL_HEADER);
    const shard = request.headers.get(SHARD_HEADER);
    if (!principal || !shard) return new Response("missing principal", { status: 400 });
    if (this.shardName !== shard) {
      this.shardName = shard;
      await this.ctx.storage.put("shard", shard);
    }
    // No await between the count and the accept: the check and the slot are one step.
    if (this.ctx.getWebSockets(principal).length >= MAX_CONNECTIONS_PER_PRINCIPAL) {
      return problemResponse(problem("STREAM_LIMIT", `at most ${MAX_CONNECTIONS_PER_PRINCIPAL} concurrent WebSocket connections per ${principal.startsWith("key:") ? "API key" : "IP"}`), undefined);
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [principal]);
    server.serializeAttachment({ principal, streams: [], warnings: 0 } satisfies Attachment);
    const initial = new URL(request.url).searchParams.get("streams");
    if (initial) await this.subscribe(server, null, initial.split(",").slice(0, MAX_STREAMS_PER_CONNECTION + 1));
    return new Response(null, { status: 101, webSocket: client });
  }

  private send(ws: WebSocket, message: unknown): void {
    try {
      ws.send(typeof message === "string" ? message : JSON.stringify(message));
    } catch {
      // The socket closed meanwhile; its close handler cleans up.
    }
  }

  private error(ws: WebSocket, id: number | string | null, code: string, message: string): void {
    this.send(ws, { id, error: { code, message } });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const size = typeof message === "string" ? new TextEncoder().encode(message).length : message.byteLength;
    if (size > MAX_MESSAGE_BYTES) return ws.close(POLICY_VIOLATION, `messages are at most ${MAX_MESSAGE_BYTES} bytes`);
    const now = Date.now();
    const times = (this.inbound.get(ws) ?? []).filter((t) => t > now - 1000);
    times.push(now);
    this.inbound.set(ws, times);
    if (times.length > MAX_MESSAGES_PER_SECOND) return ws.close(POLICY_VIOLATION, `at most ${MAX_MESSAGES_PER_SECOND} messages per second`);

    const attachment = ws.deserializeAttachment() as Attachment;
    const parsed = typeof message === "string" ? parseClientMessage(message) : ({ ok: false, code: "INVALID_MESSAGE", message: "messages are JSON text", id: null } as const);
    if (!parsed.ok) {
      attachment.warnings += 1;
      ws.serializeAttachment(attachment);
      if (attachment.warnings > MAX_WARNINGS) return ws.close(POLICY_VIOLATION, "too many invalid messages");
      return this.error(ws, parsed.id, parsed.code, parsed.message);
    }
    const request = parsed.message;
    switch (request.op) {
      case "ping":
        return this.send(ws, { op: "pong", ...(request.id !== null ? { id: request.id } : {}), time: Date.now() });
      case "list":
        return this.send(ws, { id: request.id, result: { streams: attachment.streams } });
      case "subscribe":
        return this.subscribe(ws, request.id, request.streams);
      case "unsubscribe":
        return this.unsubscribe(ws, request.id, request.streams);
    }
  }

  private async subscribe(ws: WebSocket, id: number | string | null, names: unknown[]): Promise<void> {
    const attachment = ws.deserializeAttachment() as Attachment;
    if (names.length > MAX_STREAMS_PER_CONNECTION) {
      return this.error(ws, id, "TOO_MANY_STREAMS", `at most ${MAX_STREAMS_PER_CONNECTION} streams per request and per connection`);
    }
    const streams: StreamName[] = [];
    for (const name of names) {
      const stream = parseStreamName(name);
      if (!stream) return this.error(ws, id, "UNKNOWN_STREAM", `${JSON.stringify(name).slice(0, 70)} is not a stream: ticker.{SYMBOL}, trades.{SYMBOL}, book.{SYMBOL}, prices.{QUOTE}`);
      streams.push(stream);
    }
    const added = streams.filter((s, i) => !attachment.streams.includes(s.name) && streams.findIndex((t) => t.name === s.name) === i);
    if (attachment.streams.length + added.length > MAX_STREAMS_PER_CONNECTION) {
      return this.error(ws, id, "TOO_MANY_STREAMS", `at most ${MAX_STREAMS_PER_CONNECTION} streams per connection`);
    }
    attachment.streams.push(...added.map((s) => s.name));
    ws.serializeAttachment(attachment);
    for (const stream of added) this.subscribersOf(stream.name).add(ws);
    await Promise.all(added.map((stream) => this.register(stream)));
    this.send(ws, { id, result: { streams: attachment.streams } });
    // A book subscriber starts from a snapshot that the following deltas continue.
    for (const stream of added) {
      const book = stream.kind === "book" ? this.books.get(stream.subject) : undefined;
      if (book) this.send(ws, { stream: stream.name, data: book.snapshot(SNAPSHOT_DEPTH) });
    }
  }

  private unsubscribe(ws: WebSocket, id: number | string | null, names: unknown[]): void {
    const attachment = ws.deserializeAttachment() as Attachment;
    for (const name of names) {
      const stream = parseStreamName(name);
      if (!stream) return this.error(ws, id, "UNKNOWN_STREAM", `${JSON.stringify(name).slice(0, 70)} is not a stream`);
      attachment.streams = attachment.streams.filter((s) => s !== stream.name);
      this.subscribers.get(stream.name)?.delete(ws);
    }
    ws.serializeAttachment(attachment);
    this.send(ws, { id, result: { streams: attachment.streams } });
  }

  /** Makes sure the source publishes to this shard; for a market, also fetches the base book. */
  private register(stream: StreamName): Promise<void> {
    const source = sourceOf(stream);
    let registration = this.registrations.get(source);
    if (!registration) {
      registration = this.registerSource(stream).catch((error: unknown) => {
        this.registrations.delete(source);
        throw error;
      });
      this.registrations.set(source, registration);
    }
    return registration;
  }

  private async registerSource(stream: StreamName): Promise<void> {
    const shard = await this.shard();
    if (stream.kind === "prices") {
      await this.env.PRICE_INDEX.getByName("global").subscribeShard(stream.subject, shard);
      return;
    }
    const symbol = stream.subject;
    this.pendingBooks.set(symbol, this.pendingBooks.get(symbol) ?? []);
    const base = await this.env.MARKET.getByName(symbol).subscribeShard(symbol, shard);
    const book = new WireBook();
    book.apply({ type: "snapshot", sequence: base.sequence, bids: base.bids as BookMessage["bids"], asks: base.asks as BookMessage["asks"] });
    for (const message of this.pendingBooks.get(symbol) ?? []) {
      if (message.type === "snapshot" || message.sequence > book.sequence) book.apply(message);
    }
    this.pendingBooks.delete(symbol);
    this.books.set(symbol, book);
  }

  /** True while any stream of the stream's source (a market's three, or a quote) has a subscriber here. */
  private sourceWanted(stream: StreamName): boolean {
    const names = stream.kind === "prices" ? [stream.name] : ["ticker", "trades", "book"].map((kind) => `${kind}.${stream.subject}`);
    return names.some((name) => (this.subscribers.get(name)?.size ?? 0) > 0);
  }

  /**
   * Nobody here wants a source any more: stop its publishing to this shard. Should someone
   * subscribe meanwhile, register again afterwards and give book subscribers a new snapshot.
   */
  private async release(stream: StreamName): Promise<void> {
    const source = sourceOf(stream);
    if (this.releasing.has(source)) return;
    this.releasing.add(source);
    this.registrations.delete(source);
    this.books.delete(stream.subject);
    try {
      const shard = await this.shard();
      if (stream.kind === "prices") await this.env.PRICE_INDEX.getByName("global").unsubscribeShard(stream.subject, shard);
      else await this.env.MARKET.getByName(stream.subject).unsubscribeShard(stream.subject, shard);
    } finally {
      this.releasing.delete(source);
    }
    if (this.sourceWanted(stream)) {
      this.registrations.delete(source);
      await this.register(stream);
      this.resendSnapshot(stream.subject);
    }
  }

  private resendSnapshot(symbol: string): void {
    const book = this.books.get(symbol);
    if (!book) return;
    const name = `book.${symbol}`;
    const text = JSON.stringify({ stream: name, data: book.snapshot(SNAPSHOT_DEPTH) });
    for (const ws of this.subscribers.get(name) ?? []) this.send(ws, text);
  }

  /** Called by a market or the price index: each event goes to this shard's subscribers. */
  async publish(events: StreamEvent[]): Promise<void> {
    for (const event of events) {
      const stream = parseStreamName(event.stream);
      if (!stream) continue;
      if (!this.sourceWanted(stream)) {
        void this.release(stream).catch((error: unknown) => console.error("release failed", String(error)));
        continue;
      }
      if (stream.kind === "book" && !this.trackBook(stream, event.data as BookMessage)) continue;
      const sockets = this.subscribers.get(stream.name);
      if (!sockets || sockets.size === 0) continue;
      const text = JSON.stringify(event);
      for (const ws of sockets) this.send(ws, text);
    }
  }

  /** Keeps the shard's copy of a book; false when the message must not be forwarded as it is. */
  private trackBook(stream: StreamName, message: BookMessage): boolean {
    const symbol = stream.subject;
    const pending = this.pendingBooks.get(symbol);
    if (pending) {
      pending.push(message);
      return false; // subscribers get the snapshot the registration builds
    }
    const book = this.books.get(symbol);
    if (book && book.apply(message)) return true;
    // No copy (woken from hibernation) or a gap: rebuild it, then resend a snapshot to everyone.
    this.books.delete(symbol);
    this.registrations.delete(`market:${symbol}`);
    void this.register(stream).then(() => this.resendSnapshot(symbol));
    return false;
  }

  private forget(ws: WebSocket): void {
    const attachment = ws.deserializeAttachment() as Attachment | null;
    for (const stream of attachment?.streams ?? []) this.subscribers.get(stream)?.delete(ws);
    this.inbound.delete(ws);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.forget(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.forget(ws);
  }

  /** Open connections of a principal on this shard (tests and operators). */
  connectionCount(principal: string): number {
    return this.ctx.getWebSockets(principal).length;
  }
}
