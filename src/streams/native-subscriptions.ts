import { ProblemError } from "../core/problem";
import type { WireTrade } from "../domain/wire-trade";
import { closedHistoryOf } from "../history/closed-book-reads";
import { ensureRegistry } from "../registry/copy";
import { type Attachment, attachmentOf, headerOf, loadAttachment, saveAttachment } from "./attachment";
import { type CatchUpHost, CatchUps } from "./catch-up";
import {
  type ErrorCode,
  MAX_STREAMS_PER_CONNECTION,
  MAX_WARNINGS,
  type MessageId,
  parseClientMessage,
  parseFrom,
  parseStreamName,
  planSubscribe,
  planUnsubscribe,
  STATUS_STREAM,
  type StreamName,
  streamFrame,
} from "./protocol";
import { parseResume } from "./resume-log";
import { type ShardSources, SNAPSHOT_DEPTH } from "./shard-sources";
import type { BookMessage } from "./wire-book";

/** What the native subscriptions need of their shard. */
export interface NativeHost {
  readonly env: Env;
  readonly sources: ShardSources;
  send(ws: WebSocket, message: unknown): void;
  /** Closes with 1008 and a reason (a connection past its invalid messages). */
  closeForPolicy(ws: WebSocket, reason: string): void;
  /** Makes the streams' sources publish here; false (the streams taken back out of the attachment) when they could not. */
  ensureSources(ws: WebSocket, adding: StreamName[], waitForBase?: readonly string[]): Promise<boolean>;
  /** The venue's status as it is now, for a `status` subscriber. */
  currentStatus(): Promise<unknown>;
  count: CatchUpHost["count"];
}

/**
 * The native protocol on a shard (docs/streams.md#messages): its messages, which sockets take
 * each stream, a subscribe (with a resume, or a catch-up from `from`: ./catch-up.ts), an
 * unsubscribe, and the fan-out of what is published to its subscribers — each message serialized
 * once, the same string to every socket. The shard keeps its connections, their limits, the
 * dialects and the alarm (./stream-hub.ts); sockets hibernate, and after a wake-up each socket's
 * streams come back from its attachment (`restore`).
 */
export class NativeSubscriptions {
  private readonly subscribers = new Map<string, Set<WebSocket>>();
  /** Subscriptions that start in the past, until they meet the live streams. */
  readonly catchUps: CatchUps;

  constructor(private readonly host: NativeHost) {
    this.catchUps = new CatchUps({
      env: host.env,
      closed: closedHistoryOf(host.env, (source) => host.count("mds_history_closed_reads_total", { source }, 1)),
      send: (ws, text) => host.send(ws, text),
      books: host.sources.books,
      recent: host.sources.recent,
      baseOf: (symbol) => host.sources.baseOf(symbol),
      ensure: (ws, streams) => host.ensureSources(ws, streams),
      goLive: (ws, name) => this.subscribersOf(name).add(ws),
      save: (ws, state) => {
        const attachment = loadAttachment(ws);
        if (attachment) saveAttachment(ws, { ...attachment, catchUp: state });
      },
      stored: (ws) => headerOf(ws)?.catchUp,
      parse: (name) => parseStreamName(name),
      count: (family, labels, n) => host.count(family, labels, n),
    });
  }

  /** After a wake-up: a socket's streams, from its attachment; one still catching up is not live yet (its next `more` goes on). */
  restore(ws: WebSocket, attachment: Attachment): void {
    const catching = attachment.catchUp?.cursors ?? {};
    for (const stream of attachment.streams) if (!(stream in catching)) this.subscribersOf(stream).add(ws);
  }

  /** Whether anything here takes the stream: a live subscriber, or a catch-up on its way to it. */
  wants(name: string): boolean {
    return (this.subscribers.get(name)?.size ?? 0) > 0 || this.catchUps.wants(name);
  }

  /** The stream's live subscribers here, if any. */
  holders(stream: string): ReadonlySet<WebSocket> | undefined {
    return this.subscribers.get(stream);
  }

  private subscribersOf(stream: string): Set<WebSocket> {
    let set = this.subscribers.get(stream);
    if (!set) this.subscribers.set(stream, (set = new Set()));
    return set;
  }

  /**
   * A native connection's message (docs/streams.md#messages), once the shard has admitted it (its
   * size and rate): an invalid one is answered with an error and counted against the connection's
   * MAX_WARNINGS, past which it closes.
   */
  async message(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const parsed =
      typeof message === "string"
        ? parseClientMessage(message)
        : ({ ok: false, code: "INVALID_MESSAGE", message: "messages are JSON text, not binary", id: null } as const);
    if (!parsed.ok) {
      const attachment = attachmentOf(ws);
      attachment.warnings += 1;
      saveAttachment(ws, attachment);
      if (attachment.warnings > MAX_WARNINGS) return this.host.closeForPolicy(ws, `more than ${MAX_WARNINGS} invalid messages`);
      return this.error(ws, parsed.id, parsed.code, parsed.message);
    }
    const request = parsed.message;
    if (request.op === "subscribe") await ensureRegistry(this.host.env);
    switch (request.op) {
      case "ping":
        return this.host.send(ws, request.id === null ? { op: "pong", time: Date.now() } : { op: "pong", id: request.id, time: Date.now() });
      case "list":
        return this.host.send(ws, { id: request.id, result: { streams: attachmentOf(ws).streams } });
      case "subscribe":
        return this.subscribe(ws, request.id, request.streams, undefined, request.from);
      case "unsubscribe":
        return this.unsubscribe(ws, request.id, request.streams);
      case "more": {
        const refusal = await this.catchUps.more(ws, request.token);
        if (refusal) this.error(ws, request.id, "INVALID_MESSAGE", refusal);
        return;
      }
    }
  }

  error(ws: WebSocket, id: MessageId, code: ErrorCode, message: string): void {
    this.host.send(ws, { id, error: { code, message } });
  }

  /** A connection opened with `?streams=` (and `resume=`, `from=`): subscribed as it opens, the ack's id null. */
  async connect(ws: WebSocket, query: URLSearchParams): Promise<void> {
    const initial = query.get("streams");
    if (!initial) return;
    await ensureRegistry(this.host.env);
    const names = initial.split(",", MAX_STREAMS_PER_CONNECTION + 1).filter((name) => name !== "");
    await this.subscribe(ws, null, names, parseResume(query.get("resume")), parseFrom(query.get("from")) ?? undefined);
  }

  /**
   * Adds streams to a connection: the ack comes once every source publishes to this shard,
   * and a book stream's snapshot right after it (or, while the base book is still on its
   * way, as soon as it arrives). With `from`, its book and trades streams catch up from that
   * moment first (./catch-up.ts); the others start now, and the ack says which.
   */
  async subscribe(ws: WebSocket, id: MessageId, names: unknown[], resume: ReadonlyMap<string, number> = new Map(), from?: number): Promise<void> {
    const attachment = attachmentOf(ws);
    const plan = planSubscribe(attachment.streams, names);
    if (!plan.ok) return this.error(ws, id, plan.code, plan.message);
    const catching = from === undefined ? [] : plan.streams.filter((s) => s.kind === "trades" || (s.kind === "book" && !resume.has(s.name)));
    const refusal = from !== undefined && catching.length > 0 ? this.catchUps.refusal(ws, from, catching.length, Date.now()) : undefined;
    if (refusal) return this.error(ws, id, refusal.code, refusal.message);
    attachment.streams.push(...plan.streams.map((s) => s.name));
    saveAttachment(ws, attachment);
    const resuming = plan.streams.filter((s) => s.kind === "book" && resume.has(s.name)).map((s) => s.subject);
    const registered = await this.host.ensureSources(ws, plan.streams, resuming);
    if (!registered) return this.error(ws, id, "INTERNAL_ERROR", "the streams could not be subscribed; try again");
    if (from !== undefined && catching.length > 0) {
      try {
        await this.catchUps.open(ws, from, catching);
      } catch (error) {
        const current = attachmentOf(ws);
        current.streams = current.streams.filter((name) => !plan.streams.some((s) => s.name === name));
        saveAttachment(ws, current);
        const notKept = error instanceof ProblemError && error.code === "NOT_FOUND";
        return this.error(ws, id, notKept ? "HISTORY_NOT_KEPT" : "INTERNAL_ERROR", notKept ? error.message : "the catch-up could not start; try again");
      }
    }
    // The status is asked (a call to the price index on a shard that holds none) before the
    // connection becomes a subscriber of anything: no await may come after that.
    const status = plan.streams.some((s) => s.kind === "status") ? await this.host.currentStatus() : undefined;
    if (ws.readyState !== WebSocket.OPEN) return; // closed while waiting
    // An unsubscribe may have come meanwhile: the attachment is the truth. From here to the last
    // send nothing awaits: what a resume sends and the deltas after it are one unbroken order.
    const held = attachmentOf(ws).streams;
    const added = plan.streams.filter((s) => held.includes(s.name) && !catching.includes(s));
    for (const stream of added) this.subscribersOf(stream.name).add(ws);
    const resumed = new Map<string, string[]>();
    for (const stream of added) {
      const at = stream.kind === "book" ? resume.get(stream.name) : undefined;
      const book = this.host.sources.books.get(stream.subject);
      const continuation = at !== undefined && book ? this.host.sources.recent.continuation(stream.subject, at, book.sequence) : undefined;
      if (continuation) resumed.set(stream.name, continuation);
    }
    const catchingUp = this.catchUps.catchingUp(ws);
    this.host.send(ws, {
      id,
      result: {
        streams: held,
        ...(resumed.size > 0 && { resumed: [...resumed.keys()] }),
        ...(from !== undefined && { from, catchingUp, startsNow: added.map((s) => s.name) }),
      },
    });
    for (const stream of added) {
      const continued = resumed.get(stream.name);
      if (continued) {
        for (const text of continued) this.host.send(ws, text);
        continue;
      }
      const book = stream.kind === "book" ? this.host.sources.books.get(stream.subject) : undefined;
      if (book) this.host.send(ws, { stream: stream.name, data: book.snapshot(SNAPSHOT_DEPTH) });
      // The status as it is now, so a subscriber never waits for the next change.
      if (stream.kind === "status" && status) this.host.send(ws, { stream: STATUS_STREAM, data: status });
    }
    if (catchingUp.length > 0) void this.catchUps.pump(ws);
  }

  unsubscribe(ws: WebSocket, id: MessageId, names: unknown[]): void {
    const attachment = attachmentOf(ws);
    const plan = planUnsubscribe(attachment.streams, names);
    if (!plan.ok) {
      this.error(ws, id, plan.code, plan.message);
      return;
    }
    attachment.streams = attachment.streams.filter((name) => !plan.streams.some((s) => s.name === name));
    saveAttachment(ws, attachment);
    this.catchUps.drop(
      ws,
      plan.streams.map((s) => s.name),
    );
    for (const stream of plan.streams) this.subscribers.get(stream.name)?.delete(ws);
    this.host.send(ws, { id, result: { streams: attachment.streams } });
  }

  /** Streams a socket no longer takes. */
  drop(ws: WebSocket, names: readonly string[]): void {
    for (const name of names) this.subscribers.get(name)?.delete(ws);
  }

  /** Streams that ended (a delisted market's): neither live nor caught up any more, and the socket told why (`STREAM_ENDED`). */
  ended(ws: WebSocket, names: readonly string[], why: string): void {
    this.drop(ws, names);
    this.catchUps.drop(ws, names);
    this.error(ws, null, "STREAM_ENDED", why);
  }

  /** A closed socket: out of every stream it held, its catch-up and floors gone. */
  forget(ws: WebSocket, streams: readonly string[]): void {
    this.drop(ws, streams);
    this.catchUps.forget(ws);
  }

  /** A message published here goes to the stream's subscribers, and is kept for resumes and for catch-ups to meet. */
  deliver(stream: StreamName, data: unknown): void {
    const sockets = this.subscribers.get(stream.name);
    const { recent } = this.host.sources;
    if ((!sockets || sockets.size === 0) && !this.catchUps.wants(stream.name)) {
      // Trades nobody here takes are not kept: a kept last trade id must be the last one published.
      if (stream.kind === "trades") recent.forgetTrades(stream.subject);
      return;
    }
    // Serialized once, sent as the same string to every subscriber.
    const text = streamFrame(stream.name, data);
    if (stream.kind === "book") recent.remember(stream.subject, data as BookMessage, text);
    if (stream.kind === "trades") recent.rememberTrades(stream.subject, data as WireTrade[], text);
    const floors = stream.kind === "trades" ? this.catchUps.floorsOf(stream.name) : undefined;
    for (const ws of sockets ?? []) {
      const own = floors?.has(ws) ? this.catchUps.aboveFloor(ws, stream.name, data as WireTrade[]) : text;
      if (own !== undefined) this.host.send(ws, own);
    }
  }
}
