import type { KeyStatus } from "../access/access-guard";
import { allowListAdmits } from "../access/client-address";
import { keyStateAt } from "../access/keys";
import { alarmBy } from "../core/alarms";
import { accessGuard, marketObject } from "../core/object-ids";
import { ProblemError, problem, toProblemResult } from "../core/problem";
import type { MarketGrant } from "../domain/market-config";
import { groupOf, type MarketConfig } from "../domain/market-config";
import { logEvent, logFailure } from "../logs/log";
import { type IngestAnswer, type IngestItem, type IngestResult, type IngestVia, ingestReady } from "../market/ingest";
import { encodeIngestCall } from "../market/ingest-wire";
import type { MarketObject } from "../market/market-object";
import type { IngestBody } from "../market/schemas";
import { AlarmedMetrics } from "../metrics/alarmed-metrics";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { batchOutcome } from "../metrics/outcomes";
import { ensureRegistry } from "../registry/copy";
import { SessionLink, sessionIdleMs } from "../rpc-sessions/session-link";
import { POLICY_VIOLATION } from "../streams/protocol";
import { ChannelWindow } from "./channel-window";
import { HostCalls } from "./host-calls";
import { type BatchId, errorOf, MAX_BATCH_BYTES, MAX_CHANNELS_PER_KEY, type Parsed, parseMessage } from "./protocol";

/** The key's standing is asked again at least this often while a channel is open (docs/publishing.md#rights-on-an-open-channel). */
export const KEY_CHECK_EVERY_MS = 10_000;
/** After a check that failed, the next one comes this soon; batches meanwhile wait for it. */
const KEY_RETRY_MS = 1_000;
export const KEY_HEADER = "X-Publish-Key";
export const IP_HEADER = "X-Publish-Ip";

/** What a connection carries through hibernation: the address it publishes from, for the allow-list. */
interface Attachment {
  ip: string;
  /** The upgrade's request id, for the channel's log lines (docs/operations.md#logs). */
  requestId?: string;
}

/** A batch taken into the channel's window, waiting for its message's turn and then its answer. */
interface Taken {
  id: BatchId;
  body: IngestBody;
  /** Its share of its message's bytes (the key's pending bytes add up to what it sent). */
  size: number;
  /** Its market's group: its place in the group's share of the window. */
  group: string;
}

/** The key's standing as last checked: `checkedAt` is this object's clock. */
interface Grant {
  status: KeyStatus;
  checkedAt: number;
}

/** Why a key may not publish now, or null when it may (the allow-list is per connection). */
function refusalOf(status: KeyStatus, now: number): string | null {
  const state = status.exists ? keyStateAt(status, now) : "revoked";
  if (state !== "active") return `the publishing key ${state === "revoked" ? "was revoked" : "expired"}`;
  if (status.markets === null) return "the key is not a publishing key";
  return null;
}

/** A channel calls a host at most once in this long on average: what comes meanwhile shares the next call (`host-calls.ts`). */
const GATHER_MS = 20;

/**
 * One per publishing key: holds the key's publisher connections (`GET /v1/publish`) and applies
 * their batches through the one ingest path (docs/publishing.md#the-publisher-channel). Batches of
 * one market (by its canonical symbol, however it is spelled) are applied in the order they
 * arrived, whichever connection of the key sent them; batches of different markets go in
 * parallel, so one connection carries a whole venue. A batch is answered once its market has
 * applied it (or refused it).
 *
 * Rights end on time and checks fail closed: every batch is held to the key's standing as checked
 * at most `KEY_CHECK_EVERY_MS` ago (markets, expiry to the millisecond, revocation, the allow-list);
 * a batch that finds the check older waits for a new one, and if the guard cannot answer it is
 * refused, never applied unchecked. An alarm re-checks while connections are open, so a revoked or
 * expired key's connections close within that interval even when idle.
 */
export class PublishChannel extends MeteredObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "channel");
    this.gatherMs = Math.min(GATHER_MS, Number(env.INGEST_TICK_MS ?? "100"));
    this.sessionIdleMs = sessionIdleMs(env);
  }

  /** Its sessions' idle time (SESSION_IDLE_MS; a test may set it before the first batch). */
  sessionIdleMs: number;

  /** The calls' spacing into a host, on average (GATHER_MS; none in the workers tests unless a test sets it). */
  gatherMs: number;

  /** The batches sent and not yet answered: per connection, per group of markets, per key (flow control). */
  private readonly window = new ChannelWindow();
  /**
   * The last message's turn, over all the key's connections: a message's batches go on their way
   * (into their hosts' calls) once the one before's have, so each market's batches reach it in the
   * order they arrived — one step a message, not a chain a market (docs/benchmarks.md#one-channel).
   */
  private tail: Promise<void> = Promise.resolve();
  /** Per market host (a group), the calls its batches go in: one RPC session, a call per gathering (`host-calls.ts`). */
  private readonly hosts = new Map<number, HostCalls<IngestItem, IngestAnswer>>();
  /** How a batch reaches its market: into its group's gathered call. */
  private readonly via: IngestVia = { call: (market, body, commit) => this.hostOf(market).call({ market, body: JSON.stringify(body), commit }) };
  /** Batches and ack times, handed to the Metrics object (docs/operations.md#metrics). */
  private readonly metrics = new AlarmedMetrics(this.env, this.ctx, (at) => this.armCheck(at));
  private grant: Grant | undefined;
  private checking: Promise<Grant> | undefined;
  /**
   * Bumped by `recheck()`: a check begun before the operator's change may have been answered
   * before it, so its result never stands for after it (neither cached nor handed to a batch).
   */
  private epoch = 0;

  override async fetch(request: Request): Promise<Response> {
    const keyId = request.headers.get(KEY_HEADER);
    const ip = request.headers.get(IP_HEADER) ?? "";
    if (!keyId) return Response.json(toProblemResult(problem("VALIDATION_FAILED", "not a publisher connection")), { status: 400 });
    if ((await this.ctx.storage.get<string>("key")) !== keyId) await this.ctx.storage.put("key", keyId);
    // No await between the count and the accept: checking and taking the slot are one step.
    if (this.ctx.getWebSockets().length >= MAX_CHANNELS_PER_KEY) {
      return Response.json(
        toProblemResult(problem("STREAM_LIMIT", `at most ${MAX_CHANNELS_PER_KEY} publisher connections per publishing key; close one first`)),
        { status: 429 },
      );
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    const requestId = request.headers.get("X-Request-Id") ?? undefined;
    server.serializeAttachment({ ip, requestId } satisfies Attachment);
    logEvent({ event: "publish.channel.open", requestId, route: "/v1/publish", principal: "key", keyId });
    await this.armCheck(Date.now() + KEY_CHECK_EVERY_MS);
    return new Response(null, { status: 101, webSocket: client });
  }

  private answer(ws: WebSocket, message: unknown): void {
    try {
      ws.send(JSON.stringify(message));
    } catch {
      // closed meanwhile: the publisher resends what it did not see answered
    }
  }

  /** The key's standing, checked within `KEY_CHECK_EVERY_MS` of `now`; one check in flight at a time. */
  private currentGrant(now: number): Promise<Grant> {
    if (this.grant && now - this.grant.checkedAt < KEY_CHECK_EVERY_MS) return Promise.resolve(this.grant);
    if (!this.checking) {
      const checking = this.check(this.epoch).finally(() => {
        if (this.checking === checking) this.checking = undefined;
      });
      this.checking = checking;
    }
    return this.checking;
  }

  private async check(epoch: number): Promise<Grant> {
    const startedAt = Date.now();
    const keyId = await this.ctx.storage.get<string>("key");
    if (!keyId) throw new Error("a publisher channel without its key");
    const status = await accessGuard(this.env, `key:${keyId}`).keyStatus();
    // Counted from before the guard was asked: a revocation after that is caught by the next check.
    const grant = { status, checkedAt: startedAt };
    if (epoch === this.epoch) this.grant = grant;
    return grant;
  }

  /**
   * No await before a message takes its turn: while one awaited, the runtime would hand over the
   * next message, which could then go first. The key's standing is awaited inside the turn, so a
   * message waiting for a check keeps its place.
   */
  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const size = typeof message === "string" ? message.length : message.byteLength;
    if (size > MAX_BATCH_BYTES) return this.answer(ws, { id: null, error: errorOf("PAYLOAD_TOO_LARGE", `a message is at most ${MAX_BATCH_BYTES} bytes`) });
    const batches = parseMessage(message);
    const taken: Taken[] = [];
    for (const parsed of batches) {
      // A message's bytes are shared by its batches, so the key's pending bytes add up to what it sent.
      const batch = this.take(ws, parsed, size / batches.length);
      if (batch) taken.push(batch);
    }
    if (taken.length === 0) return;
    const receivedAt = Date.now();
    // dispatch answers its own failures; the catch keeps a fault of its own from stopping every later turn.
    this.tail = this.tail.then(() => this.dispatch(ws, taken, receivedAt)).catch((error) => logFailure("a publish message's turn failed", { error }));
    // Not awaited: the runtime hands over the next message when this handler returns.
    this.ctx.waitUntil(this.tail);
  }

  /** One batch of a message: refused now (answered), or taken into the window. */
  private take(ws: WebSocket, parsed: Parsed, size: number): Taken | undefined {
    if (!parsed.ok) {
      this.answer(ws, { id: parsed.id, error: parsed.error });
      return undefined;
    }
    const group = this.window.take(ws, parsed.body.symbol, size);
    if (group === undefined) {
      this.answer(ws, { id: parsed.id, error: this.window.full() });
      return undefined;
    }
    return { id: parsed.id, body: parsed.body, size, group };
  }

  /**
   * A message's turn: its batches on their way, in its order, each answered when its market has
   * applied it (or refused it). Never rejects (the next message's turn waits on it).
   */
  private async dispatch(ws: WebSocket, taken: Taken[], receivedAt: number): Promise<void> {
    let markets: MarketGrant;
    try {
      // The standing is asked when the turn comes, not when the message arrived: a revocation or
      // a narrowing answered meanwhile holds for every message still queued (at most those on
      // their way were admitted before it).
      markets = this.admitted(ws, await this.currentGrant(Date.now()).catch(() => null));
      await ensureRegistry(this.env);
    } catch (error) {
      for (const batch of taken) this.settle(ws, batch, receivedAt, undefined, error);
      return;
    }
    const now = Date.now();
    for (const batch of taken) {
      // Each on its way before the next (ingestReady awaits nothing before its market's call).
      ingestReady(this.env, markets, batch.body, now, { via: this.via }).then(
        (result) => this.settle(ws, batch, receivedAt, result),
        (error: unknown) => this.settle(ws, batch, receivedAt, undefined, error),
      );
    }
  }

  /** A batch's answer: its result, or its problem (`UNAVAILABLE` for what is not one); its place in the window freed. */
  private settle(ws: WebSocket, batch: Taken, receivedAt: number, result: IngestResult | undefined, error?: unknown): void {
    if (result) this.answer(ws, { id: batch.id, result });
    else if (error instanceof ProblemError) this.answer(ws, { id: batch.id, error: errorOf(error.code, error.message, error.extras) });
    else {
      // A stub that threw is broken for every later call: the next batches get new ones.
      this.hosts.clear();
      logFailure("publish batch failed", { error });
      this.answer(ws, { id: batch.id, error: errorOf("UNAVAILABLE", "the market did not apply the batch; send it again") });
    }
    this.count(result ? batchOutcome(result) : "refused", receivedAt);
    this.window.release(ws, batch.body.symbol, batch.group, batch.size);
  }

  /**
   * The calls into a market's host, on one RPC session (one stub, E-order: its batches arrive as sent), at
   * most one per GATHER_MS on average (a fifth of the tick): the calls into a group are at most 50 a second
   * a channel however many batches its markets take.
   */
  private hostOf(market: MarketConfig): HostCalls<IngestItem, IngestAnswer> {
    const group = groupOf(market);
    let calls = this.hosts.get(group);
    if (!calls) {
      const link = new SessionLink<MarketObject>(() => marketObject(this.env, market).openSession(), this.sessionIdleMs);
      calls = new HostCalls(this.gatherMs, (items) => link.call("ingestAll", encodeIngestCall(items)));
      this.hosts.set(group, calls);
    }
    return calls;
  }

  /** The markets this connection may write now, or the refusal: a batch is never applied unchecked. */
  private admitted(ws: WebSocket, grant: Grant | null): MarketGrant {
    // A connection closed by a check (or by its publisher) applies nothing more of what it queued.
    if (ws.readyState !== WebSocket.OPEN) throw problem("UNAVAILABLE", "the connection closed before the batch's turn; it was not applied");
    if (!grant) throw problem("UNAVAILABLE", "the publishing key could not be checked; the batch was not applied — send it again");
    const refusal = refusalOf(grant.status, Date.now());
    if (refusal) {
      this.closeAll(refusal);
      throw problem("INVALID_API_KEY", `${refusal}; the batch was not applied`);
    }
    const { ip } = ws.deserializeAttachment() as Attachment;
    if (!allowListAdmits(grant.status.allowCidrs, ip)) {
      this.close(ws, "the connection's address left the key's allow-list");
      throw problem("IP_NOT_ALLOWED", `${ip} is not in the publishing key's allow-list; the batch was not applied`);
    }
    return grant.status.markets ?? [];
  }

  private close(ws: WebSocket, reason: string): void {
    try {
      ws.close(POLICY_VIOLATION, reason);
      this.logClose(ws, POLICY_VIOLATION);
    } catch {
      // already closing
    }
  }

  /** A channel closed, by either side: one log line with its key and the upgrade's request id. */
  private logClose(ws: WebSocket, closeCode: number): void {
    const attachment = ws.deserializeAttachment() as Attachment | null;
    void this.ctx.storage
      .get<string>("key")
      .then((keyId) =>
        logEvent({ event: "publish.channel.close", requestId: attachment?.requestId, route: "/v1/publish", principal: "key", keyId, closeCode }),
      );
  }

  private closeAll(reason: string): void {
    for (const ws of this.ctx.getWebSockets()) this.close(ws, reason);
  }

  /** Applies a fresh check to the open connections: a key that may no longer publish closes them all (1008). */
  private enforce(grant: Grant): void {
    const refusal = refusalOf(grant.status, Date.now());
    if (refusal) {
      this.closeAll(refusal);
      return;
    }
    for (const ws of this.ctx.getWebSockets()) {
      const { ip } = ws.deserializeAttachment() as Attachment;
      if (!allowListAdmits(grant.status.allowCidrs, ip)) this.close(ws, "the connection's address left the key's allow-list");
    }
  }

  /** The operator changed or revoked the key: check now instead of at the next interval. */
  async recheck(): Promise<void> {
    if (this.ctx.getWebSockets().length === 0) return;
    this.epoch += 1;
    this.grant = undefined;
    this.checking = undefined;
    this.enforce(await this.currentGrant(Date.now()));
  }

  private armCheck(at: number): Promise<void> {
    return alarmBy(this.ctx.storage, at);
  }

  /** A batch's result and the time to its answer (docs/operations.md#metrics), handed on when due. */
  private count(outcome: "applied" | "duplicate" | "refused", receivedAt: number): void {
    this.metrics.observe("mds_publish_ack_seconds", (Date.now() - receivedAt) / 1000);
    this.metrics.add("mds_publish_batches_total", { result: outcome });
    super.afterRequest();
  }

  /** Hands the counts on when due; what is not yet due goes on from the alarm, so a channel that falls silent still hands it on. */
  override afterRequest(): void {
    super.afterRequest();
    this.metrics.settle();
  }

  /** While connections are open, the key is checked every `KEY_CHECK_EVERY_MS` (sooner after a failed check). */
  override async alarm(): Promise<void> {
    await this.metrics.onAlarm(Date.now(), []);
    if (this.ctx.getWebSockets().length === 0) return;
    try {
      this.grant = undefined;
      this.enforce(await this.currentGrant(Date.now()));
      await this.armCheck(Date.now() + KEY_CHECK_EVERY_MS);
    } catch (error) {
      logFailure("publishing key check failed; batches wait for the next", { error });
      await this.armCheck(Date.now() + KEY_RETRY_MS);
    }
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.window.clear(ws);
    this.logClose(ws, code);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.window.clear(ws);
    this.logClose(ws, 1006);
  }
}

meterRequests(PublishChannel, ["fetch", "webSocketMessage", "recheck", "alarm"]);
