import { alarmBy } from "../core/alarms";
import { problem, toProblemResult } from "../core/problem";
import { logFailure } from "../logs/log";
import { AlarmedMetrics } from "../metrics/alarmed-metrics";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { ensureRegistry } from "../registry/copy";
import { ObjectSession } from "../rpc-sessions/object-session";
import {
  type Attachment,
  adoptSocket,
  attachmentOf,
  headerOf,
  loadAttachment,
  releaseNames,
  restoreNames,
  type StoredAttachment,
  saveAttachment,
} from "./attachment";
import { DIALECT_HEADER, DIALECT_OPTIONS_HEADER, DIALECT_STREAMS_HEADER, type DialectStream, decodeOptions, dialectOf, type StreamDialect } from "./dialect";
import { DialectConnections } from "./dialect-connections";
import { NativeSubscriptions } from "./native-subscriptions";
import { type CloseKind, closingNotice, plannedClose } from "./planned-close";
import {
  admitMessage,
  frameBytes,
  HEARTBEAT_EVERY_MS,
  HEARTBEAT_STREAM,
  KEEPALIVE_REQUEST,
  KEEPALIVE_RESPONSE,
  KEY_CHECK_EVERY_MS,
  MARKET_ENDED_STREAM,
  MAX_MESSAGE_BYTES,
  MAX_MESSAGES_PER_SECOND,
  marketStreams,
  POLICY_VIOLATION,
  parseStreamName,
  STATUS_STREAM,
  type StreamEvent,
  type StreamName,
} from "./protocol";
import { ShardDuties, type VenueStatusMessage } from "./shard-duties";
import { ShardLeases } from "./shard-leases";
import { ShardSources } from "./shard-sources";
import type { BookMessage } from "./wire-book";

export const PRINCIPAL_HEADER = "X-Stream-Principal";
export const SHARD_HEADER = "X-Stream-Shard";

/**
 * One shard of the WebSocket fan-out (docs/streams.md#placement): connections land on a shard of
 * their markets' group; sockets hibernate, their subscriptions kept in their attachments. Every
 * snapshot a client gets comes from the shard's copy of the book, kept by every delta in the
 * market's order, so the deltas after it continue it exactly (docs/streams.md#checksums).
 *
 * Its jobs apart: `attachment.ts` (what a socket keeps), `shard-leases.ts` (the five connections
 * per principal), `shard-sources.ts` (what publishes here, the book copies), `shard-duties.ts` (the
 * alarm's stored duties), `native-subscriptions.ts` and `dialect-connections.ts` (the protocols).
 * Here: connections and their limits, what is published handed to both protocols, planned closes,
 * and the alarm.
 */
export class StreamHub extends MeteredObject {
  /** What publishes here, the book copies and the resume log (./shard-sources.ts). */
  private readonly sources: ShardSources;
  /** Arrival times of each socket's messages in the last second (lost on hibernation: harmless). */
  private readonly inbound = new Map<WebSocket, number[]>();
  private shardName: string | undefined;
  /** The connections in other exchanges' protocols (./dialect-connections.ts). */
  private readonly dialects: DialectConnections;
  /** The native protocol's subscriptions, catch-ups and fan-out (./native-subscriptions.ts). */
  private readonly natives: NativeSubscriptions;
  /** Frames sent and book delivery times, handed to the Metrics object (docs/operations.md#metrics). */
  private readonly metrics: AlarmedMetrics;
  /** The connections' leases from their principals' guards (./shard-leases.ts). */
  private readonly leases: ShardLeases;

  /** The alarm's duties that keep their state in storage: heartbeat, key checks, maintenance notices, a planned close. */
  private readonly duties: ShardDuties;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "shard");
    this.leases = new ShardLeases(env, ctx);
    this.metrics = new AlarmedMetrics(env, this.ctx, (at) => this.armAlarm(at));
    this.sources = new ShardSources({
      env,
      shard: () => this.shard(),
      armAlarm: (at) => this.armAlarm(at),
      armHeartbeat: () => this.armHeartbeat(),
      wants: (name) => this.natives.wants(name) || this.dialects.wants(name),
    });
    this.natives = new NativeSubscriptions({
      env,
      sources: this.sources,
      send: (ws, message) => this.send(ws, message),
      closeForPolicy: (ws, reason) => this.closeForPolicy(ws, reason),
      ensureSources: (ws, adding, waitForBase) => this.ensureSources(ws, adding, waitForBase),
      currentStatus: () => this.duties.currentStatus(),
      count: (family, labels, n) => this.metrics.add(family, labels, n),
    });
    this.dialects = new DialectConnections({
      env,
      send: (ws, message) => this.send(ws, message),
      closeForPolicy: (ws, reason) => this.closeForPolicy(ws, reason),
      ensureSources: (ws, adding) => this.ensureSources(ws, adding),
      bookOf: (symbol) => this.sources.books.get(symbol),
    });
    this.duties = new ShardDuties({
      env,
      storage: this.ctx.storage,
      sockets: () => this.ctx.getWebSockets().map((ws) => ({ ws, principal: (ws.deserializeAttachment() as StoredAttachment | null)?.principal })),
      subscribersOf: (stream) => this.natives.holders(stream),
      send: (ws, message) => this.send(ws, message),
      closeForPolicy: (ws, reason) => this.closeForPolicy(ws, reason),
      closeWith: (ws, code, reason) => this.closeWith(ws, code, reason),
      closingNoticeOf: (ws, close, now) => this.dialectOfSocket(ws)?.closingNotice(close, now, headerOf(ws).dialect?.options ?? {}) ?? closingNotice(close),
      heartbeatUnwanted: () => this.sources.registrations.delete(HEARTBEAT_STREAM),
      maintenanceNoticeOf: (ws, now) => this.dialectOfSocket(ws)?.maintenanceNotice(now, headerOf(ws).dialect?.options ?? {}) ?? undefined,
    });
    // The keepalive is answered by the runtime, so idle connections never wake the shard.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(KEEPALIVE_REQUEST, KEEPALIVE_RESPONSE));
    const dialectSockets: [WebSocket, Attachment][] = [];
    restoreNames(ctx.storage.sql, ctx.getWebSockets());
    for (const ws of ctx.getWebSockets()) {
      const attachment = loadAttachment(ws);
      if (attachment?.dialect) dialectSockets.push([ws, attachment]);
      else if (attachment) this.natives.restore(ws, attachment);
    }
    // A dialect's names resolve against the registry copy: restored once it is loaded.
    if (dialectSockets.length > 0) {
      ctx.blockConcurrencyWhile(async () => {
        await ensureRegistry(env);
        for (const [ws, attachment] of dialectSockets) {
          const dialect = dialectOf(attachment.dialect!.id);
          if (dialect) this.dialects.restore(ws, dialect, attachment);
        }
      });
    }
  }

  /** The dialect a socket speaks, or undefined for the native protocol. */
  private dialectOfSocket(ws: WebSocket): StreamDialect | undefined {
    return dialectOf(headerOf(ws).dialect?.id);
  }

  private async shard(): Promise<string> {
    this.shardName ??= (await this.ctx.storage.get<string>("shard")) ?? "shard-0";
    return this.shardName;
  }

  /**
   * Upgrades a connection, or refuses a sixth one of the same principal before the upgrade
   * (a `ProblemResult` with status 429, which the route turns into problem JSON).
   */
  override async fetch(request: Request): Promise<Response> {
    const principal = request.headers.get(PRINCIPAL_HEADER);
    const shard = request.headers.get(SHARD_HEADER);
    if (!principal || !shard) return Response.json(toProblemResult(problem("VALIDATION_FAILED", "not a stream connection")), { status: 400 });
    if (this.shardName !== shard) {
      this.shardName = shard;
      await this.ctx.storage.put("shard", shard);
    }
    // The principal's guard counts its connections on every shard (docs/limits.md#stream-connections).
    const lease = await this.leases.take(principal, shard);
    if (lease instanceof Response) return lease;
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [principal]);
    adoptSocket(this.ctx.storage.sql, server);
    this.leases.accepted(lease);
    // A key's connections are checked while open: revoked or expired, they close (docs/streams.md#closes-and-ended-streams).
    if (principal.startsWith("key:")) {
      this.duties.keyConnected(Date.now());
      await this.armAlarm(Date.now() + KEY_CHECK_EVERY_MS);
    }
    const dialect = dialectOf(request.headers.get(DIALECT_HEADER));
    saveAttachment(server, {
      principal,
      streams: [],
      warnings: 0,
      lease,
      ...(dialect && { dialect: { id: dialect.id, options: decodeOptions(request.headers.get(DIALECT_OPTIONS_HEADER)) } }),
    } satisfies Attachment);
    this.duties.tellOpening(server, Date.now());
    if (dialect) await this.dialects.connect(server, dialect, request.headers.get(DIALECT_STREAMS_HEADER));
    else await this.natives.connect(server, new URL(request.url).searchParams);
    return new Response(null, { status: 101, webSocket: client });
  }

  private send(ws: WebSocket, message: unknown): void {
    try {
      ws.send(typeof message === "string" ? message : JSON.stringify(message));
      this.metrics.addSoon("mds_stream_messages_sent_total");
    } catch {
      // The socket closed meanwhile; its close handler cleans up.
    }
  }

  /** Every close the service makes: a documented code and its reason (docs/streams.md#closes-and-ended-streams). */
  private closeWith(ws: WebSocket, code: number, reason: string): void {
    this.forget(ws);
    try {
      ws.close(code, reason);
    } catch {
      // already closing
    }
  }

  /** Closes with 1008 and a reason: abuse, or a key that lost its right. */
  private closeForPolicy(ws: WebSocket, reason: string): void {
    this.closeWith(ws, POLICY_VIOLATION, reason);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const mostBytes = this.dialectOfSocket(ws)?.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    if (frameBytes(message, mostBytes) > mostBytes) return this.closeForPolicy(ws, `messages are at most ${mostBytes} bytes`);
    let times = this.inbound.get(ws);
    if (!times) this.inbound.set(ws, (times = []));
    const most = this.dialectOfSocket(ws)?.messagesPerSecond ?? MAX_MESSAGES_PER_SECOND;
    if (!admitMessage(times, Date.now(), most)) return this.closeForPolicy(ws, `at most ${most} messages per second`);

    const dialect = this.dialectOfSocket(ws);
    if (dialect) {
      await ensureRegistry(this.env);
      return dialect.message(this.dialects.connectionOf(ws, dialect), message);
    }
    return this.natives.message(ws, message);
  }

  /**
   * Makes the source of every stream being added publish to this shard (a dialect's stream's is its
   * native stream's); on failure takes the streams back out of the socket's attachment and says false.
   */
  private async ensureSources(ws: WebSocket, adding: (StreamName | DialectStream)[], waitForBase: readonly string[] = []): Promise<boolean> {
    try {
      await this.sources.join(
        adding.map((s) => ("native" in s ? s.native : s)),
        waitForBase,
      );
      return true;
    } catch (error) {
      logFailure("subscribe failed", { error });
      const current = attachmentOf(ws);
      current.streams = current.streams.filter((name) => !adding.some((s) => s.name === name));
      saveAttachment(ws, current);
      return false;
    }
  }

  /**
   * The heartbeat is one of the shard's alarm duties, due only while a connection here asked for
   * it: a shard without heartbeat subscribers is never woken for it.
   */
  private async armHeartbeat(): Promise<void> {
    this.duties.heartbeatWanted(Date.now());
    await this.armAlarm(Date.now() + HEARTBEAT_EVERY_MS);
  }

  /** Makes the one alarm fire no later than `at`. */
  private armAlarm(at: number): Promise<void> {
    return alarmBy(this.ctx.storage, at);
  }

  /**
   * The shard's duties on its one alarm: a planned close that is due, the heartbeat, re-checking the API keys of open
   * connections (every `KEY_CHECK_EVERY_MS`), and asking again for a base book that has not come
   * (`BASE_TIMEOUT_MS`: a join lost on its way to the relay heals). The alarm is set for the
   * earliest duty due, and not at all when none is.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const due: number[] = [];
    const closeDue = this.duties.closeIfDue(now);
    if (closeDue !== undefined) due.push(closeDue);
    const heartbeatDue = this.duties.heartbeat(now);
    if (heartbeatDue !== undefined) due.push(heartbeatDue);
    const keysDue = await this.duties.checkKeys(now);
    if (keysDue !== undefined) due.push(keysDue);
    const noticeDue = this.duties.maintenanceNotices(now);
    if (noticeDue !== undefined) due.push(noticeDue);
    due.push(...this.sources.reaskBases(now));
    await this.metrics.onAlarm(now, due);
    if (due.length > 0) await this.ctx.storage.setAlarm(Math.min(...due));
  }

  /**
   * A market was delisted (its object says so down the streams' own channel): its streams end on
   * every connection here. A native connection is told which (`STREAM_ENDED`); a dialect's one stops
   * receiving them, and LIST_SUBSCRIPTIONS no longer names them.
   */
  private endMarket(symbol: string): void {
    const native = new Set(marketStreams(symbol));
    const dialectNames = this.dialects.namesOf(symbol);
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = loadAttachment(ws);
      if (!attachment) continue;
      const id = attachment.dialect?.id;
      const ending = id === undefined ? native : dialectNames.get(id);
      const ended = attachment.streams.filter((name) => ending?.has(name));
      if (ended.length === 0) continue;
      attachment.streams = attachment.streams.filter((name) => !ended.includes(name));
      saveAttachment(ws, attachment);
      if (id !== undefined) this.dialects.remove(id, ws, ended);
      else this.natives.ended(ws, ended, `${symbol} was delisted; these streams ended: ${ended.join(", ")}`);
    }
    this.sources.forgetMarket(symbol);
  }

  /** A planned close, the operator's (`ShardDuties.announceClose`): how many connections were told. */
  async announceClose(kind: CloseKind, closeAt: number): Promise<number> {
    const { told, dueAt } = this.duties.announceClose(plannedClose(kind, closeAt), Date.now());
    if (dueAt !== undefined) await this.armAlarm(dueAt);
    return told;
  }

  /** Hands the counts on when due; else the alarm does, which lets the shard hibernate meanwhile (a timer would not). */
  override afterRequest(): void {
    super.afterRequest();
    this.metrics.settle();
  }

  /** For a scrape: the open connections by dialect, once this shard's counts are handed on. */
  async scrape(): Promise<Record<string, number>> {
    await this.metrics.flush();
    const connections: Record<string, number> = { native: 0 };
    for (const ws of this.ctx.getWebSockets()) {
      const dialect = (ws.deserializeAttachment() as StoredAttachment | null)?.dialect?.id ?? "native";
      connections[dialect] = (connections[dialect] ?? 0) + 1;
    }
    return connections;
  }

  /** A group relay's session (`../rpc-sessions/`): its ticks' events ride on it, one billed request. */
  openSession(): ObjectSession<StreamHub> {
    return new ObjectSession<StreamHub>(this, ["publish"]);
  }

  /** Called by a group relay (once per tick at most) or the price index (`from`): each event goes to this shard's subscribers. */
  async publish(events: StreamEvent[], from: "relay" | "index" = "relay"): Promise<void> {
    if (from === "relay") this.metrics.add("mds_relay_shard_calls_total");
    await ensureRegistry(this.env);
    for (const event of events) {
      if (event.stream === MARKET_ENDED_STREAM) {
        this.endMarket((event.data as { symbol: string }).symbol);
        continue;
      }
      if (event.stream === STATUS_STREAM) {
        const due = this.duties.takeStatus(event.data as VenueStatusMessage, Date.now());
        if (due !== undefined) await this.armAlarm(due);
        continue;
      }
      const stream = parseStreamName(event.stream);
      if (!stream) continue;
      if (!this.sources.sourceWanted(stream)) {
        this.sources.release(stream);
        continue;
      }
      const data = stream.kind === "book" ? this.sources.trackBook(stream, event.data as BookMessage) : event.data;
      if (data === undefined) continue;
      // From the market applying the update to this shard sending it (the book's `time`, in the market's clock).
      const appliedAt = stream.kind === "book" ? (data as BookMessage).time : undefined;
      if (appliedAt !== undefined) this.metrics.observe("mds_stream_delivery_seconds", Math.max(0, Date.now() - appliedAt) / 1000);
      // Every protocol is rendered from the same message the native subscribers get.
      this.dialects.deliver(stream, data, this.sources.books.get(stream.subject));
      this.natives.deliver(stream, data);
    }
  }

  /** A key's guard says its key ended (revoked): its connections here close now with `reason` (1008), not at the next check. */
  keyEnded(principal: string, reason: string): void {
    for (const ws of this.ctx.getWebSockets(principal)) this.closeForPolicy(ws, reason);
  }

  /** Which of a guard's leases are still open here (or being opened): the rest died with a restart or a crash. */
  leasesHeld(ids: string[]): string[] {
    return this.leases.held(ids);
  }

  private forget(ws: WebSocket): void {
    const attachment = loadAttachment(ws);
    if (attachment) this.leases.giveBack(ws, attachment);
    if (attachment?.dialect) this.dialects.remove(attachment.dialect.id, ws, attachment.streams);
    else this.natives.forget(ws, attachment?.streams ?? []);
    releaseNames(ws);
    this.inbound.delete(ws);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.forget(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed (the runtime answers Close frames itself)
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.forget(ws);
  }
}

meterRequests(StreamHub, ["fetch", "webSocketMessage", "alarm", "announceClose", "scrape", "publish", "openSession", "leasesHeld", "keyEnded"]);
