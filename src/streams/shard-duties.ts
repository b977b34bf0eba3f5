import { keyStateAt } from "../access/keys";
import { maintenanceNotices } from "../announcements/model";
import type { Announcement } from "../announcements/schemas";
import { accessGuard, priceIndex } from "../core/object-ids";
import type { MarketAnswer } from "../domain/market-answer";
import { logFailure } from "../logs/log";
import type { PlannedClose } from "./planned-close";
import {
  HEARTBEAT_EVERY_MS,
  HEARTBEAT_STREAM,
  KEY_CHECK_EVERY_MS,
  KEY_RECHECK_EVERY_MS,
  MAINTENANCE_NOTICE_LEAD_MS,
  STATUS_STREAM,
  streamFrame,
} from "./protocol";

/** The `status` stream's message: the body of `GET /api/status` (docs/operations.md#announcements). */
export type VenueStatusMessage = { announcements?: Announcement[] } & Record<string, unknown>;

/** A key whose standing could not be checked for this long has its connections closed: the check fails closed. */
const KEY_UNVERIFIED_CLOSE_MS = 2 * KEY_RECHECK_EVERY_MS;
/** Storage key of the heartbeat counter: it survives hibernation, so a client sees no step back. */
const HEARTBEAT_KEY = "heartbeatSequence";
/** Storage keys of when the next heartbeat and the next key check are due (the one alarm serves both). */
const HEARTBEAT_DUE_KEY = "heartbeatDue";
const KEYS_DUE_KEY = "keysDue";
/** Storage key of a planned close under way (its code, reason and time): it survives hibernation. */
const CLOSING_KEY = "closing";
/** The venue's status as the price index last pushed it, and the maintenances its dialects' connections were told of. */
const STATUS_KEY = "status";
const NOTICED_KEY = "maintenanceNoticed";
/** Per key whose check failed, when the failing began (the check after its last good one; survives hibernation). */
const KEY_FAILING_PREFIX = "keyFailing:";

/** What the duties need of their shard. */
export interface DutyHost {
  readonly env: Env;
  readonly storage: DurableObjectStorage;
  /** The open connections, each with its principal. */
  sockets(): { ws: WebSocket; principal: string | undefined }[];
  /** Subscribers of a stream here (the heartbeat's, the status's). */
  subscribersOf(stream: string): ReadonlySet<WebSocket> | undefined;
  send(ws: WebSocket, message: unknown): void;
  closeForPolicy(ws: WebSocket, reason: string): void;
  /** Closes with a code and reason (a planned close's). */
  closeWith(ws: WebSocket, code: number, reason: string): void;
  /** A planned close's notice in the words of a connection's protocol. */
  closingNoticeOf(ws: WebSocket, close: PlannedClose, now: number): string;
  /** Nobody listens to the heartbeat: its registration goes, so a new subscriber arms it again. */
  heartbeatUnwanted(): void;
  /** A maintenance notice in the words of a connection's protocol, if it has one. */
  maintenanceNoticeOf(ws: WebSocket, now: number): string | undefined;
}

/**
 * A shard's duties that run on its one alarm and keep their state in storage, so they survive
 * hibernation (docs/streams.md): the heartbeat, re-checking the API keys of open connections,
 * telling connections of a maintenance, and the planned close under way. Each says when it is
 * next due; the shard sets its alarm for the earliest.
 */
export class ShardDuties {
  constructor(private readonly host: DutyHost) {}

  private get kv(): SyncKvStorage {
    return this.host.storage.kv;
  }

  /** A connection asked for the heartbeat: due from now (unless it is already). */
  heartbeatWanted(now: number): void {
    if (this.kv.get<number>(HEARTBEAT_DUE_KEY) === undefined) this.kv.put(HEARTBEAT_DUE_KEY, now + HEARTBEAT_EVERY_MS);
  }

  /** Sends the heartbeat if due; returns when the next is due, or undefined when nobody listens. */
  heartbeat(now: number): number | undefined {
    const sockets = this.host.subscribersOf(HEARTBEAT_STREAM);
    if (!sockets || sockets.size === 0) {
      this.host.heartbeatUnwanted();
      this.forget(HEARTBEAT_DUE_KEY);
      return undefined;
    }
    const dueAt = this.kv.get<number>(HEARTBEAT_DUE_KEY) ?? now;
    if (now < dueAt) return dueAt;
    const sequence = (this.kv.get<number>(HEARTBEAT_KEY) ?? 0) + 1;
    this.kv.put(HEARTBEAT_KEY, sequence);
    const text = streamFrame(HEARTBEAT_STREAM, { time: now, sequence });
    for (const ws of sockets) this.host.send(ws, text);
    this.kv.put(HEARTBEAT_DUE_KEY, now + HEARTBEAT_EVERY_MS);
    return now + HEARTBEAT_EVERY_MS;
  }

  /** A key's connection opened here, its standing just checked: a check within KEY_CHECK_EVERY_MS learns its expiry. */
  keyConnected(now: number): void {
    const due = this.kv.get<number>(KEYS_DUE_KEY);
    if (due === undefined || due > now + KEY_CHECK_EVERY_MS) this.kv.put(KEYS_DUE_KEY, now + KEY_CHECK_EVERY_MS);
  }

  /**
   * Re-checks the standing of every API key with connections here (one guard call per key), if due:
   * a revoked or expired key's connections close with 1008 and a reason; so do those of a key that
   * could not be checked for `KEY_UNVERIFIED_CLOSE_MS` (the check fails closed). The next check is
   * due in KEY_RECHECK_EVERY_MS, or when a key checked now expires if sooner (a revocation comes
   * from the guard at once: `keyEnded`). A check that finds the key active writes nothing: only the
   * first failed check of a key writes when its failing began (kept through hibernation), and the
   * next good one deletes it. Returns when the next check is due, or undefined when no key has a
   * connection here.
   */
  async checkKeys(now: number): Promise<number | undefined> {
    const byKey = new Map<string, WebSocket[]>();
    for (const { ws, principal } of this.host.sockets()) {
      if (principal?.startsWith("key:")) byKey.set(principal, [...(byKey.get(principal) ?? []), ws]);
    }
    for (const [key] of this.kv.list<number>({ prefix: KEY_FAILING_PREFIX })) {
      if (!byKey.has(key.slice(KEY_FAILING_PREFIX.length))) this.kv.delete(key);
    }
    if (byKey.size === 0) {
      this.forget(KEYS_DUE_KEY);
      return undefined;
    }
    const dueAt = this.kv.get<number>(KEYS_DUE_KEY) ?? now;
    if (now < dueAt) return dueAt;
    let next = now + KEY_RECHECK_EVERY_MS;
    await Promise.all(
      [...byKey].map(async ([principal, sockets]) => {
        let reason: string | null = null;
        try {
          const status = await accessGuard(this.host.env, principal).keyStatus();
          const state = status.exists ? keyStateAt(status, Date.now()) : "revoked";
          if (state === "active") {
            this.forget(KEY_FAILING_PREFIX + principal);
            if (status.expiresAt !== null) next = Math.min(next, status.expiresAt);
          } else reason = `the API key ${state === "revoked" ? "was revoked" : "expired"}`;
        } catch (error) {
          logFailure("stream key check failed", { principal, error });
          // Failing since the check after the last good one: closed once it has failed for the bound.
          const failingSince = this.kv.get<number>(KEY_FAILING_PREFIX + principal);
          if (failingSince === undefined) this.kv.put(KEY_FAILING_PREFIX + principal, now);
          else if (now - failingSince >= KEY_UNVERIFIED_CLOSE_MS - KEY_RECHECK_EVERY_MS) reason = "the API key could not be checked";
        }
        if (reason) for (const ws of sockets) this.host.closeForPolicy(ws, reason);
      }),
    );
    this.kv.put(KEYS_DUE_KEY, next);
    return next;
  }

  /**
   * A planned close (docs/streams.md#closes-and-ended-streams), the operator's: every connection
   * here is told now and closed with the kind's code and reason at `closeAt` (the alarm; at once
   * when that has passed). A later announcement replaces an earlier one. Returns how many
   * connections were told, and when the alarm is due (none: closed now).
   */
  announceClose(close: PlannedClose, now: number): { told: number; dueAt?: number } {
    const sockets = this.host.sockets();
    for (const { ws } of sockets) this.host.send(ws, this.host.closingNoticeOf(ws, close, now));
    if (close.closeAt <= now) {
      this.closeAll(close);
      return { told: sockets.length };
    }
    this.kv.put(CLOSING_KEY, close);
    return { told: sockets.length, dueAt: close.closeAt };
  }

  /** A connection opening while a planned close is under way is told at once, as the others were. */
  tellOpening(ws: WebSocket, now: number): void {
    const close = this.kv.get<PlannedClose>(CLOSING_KEY);
    if (close) this.host.send(ws, this.host.closingNoticeOf(ws, close, now));
  }

  /** The alarm's part of a planned close: every connection closes once it is due; else when it will be. */
  closeIfDue(now: number): number | undefined {
    const close = this.kv.get<PlannedClose>(CLOSING_KEY);
    if (!close || now < close.closeAt) return close?.closeAt;
    this.closeAll(close);
    return undefined;
  }

  /** Ends a planned close: every connection closes with its code and reason, and the shard takes new ones as before. */
  private closeAll(close: PlannedClose): void {
    this.forget(CLOSING_KEY);
    for (const { ws } of this.host.sockets()) this.host.closeWith(ws, close.code, close.reason);
  }

  /** The status the price index pushed last, or asked of it when this shard has none yet. */
  async currentStatus(): Promise<VenueStatusMessage> {
    const held = this.kv.get<VenueStatusMessage>(STATUS_KEY);
    if (held) return held;
    // Typed here: the stub's inferred type of this call does not resolve through the index's imports.
    const answer: MarketAnswer = await priceIndex(this.host.env).status();
    const status = JSON.parse(answer.text) as VenueStatusMessage;
    this.kv.put(STATUS_KEY, status);
    return status;
  }

  /**
   * A new status from the price index (an announcement changed, started or ended): `status`
   * subscribers get it, and each dialect's connections are told of a maintenance shortly before
   * it starts (`MAINTENANCE_NOTICE_LEAD_MS`). Returns when the next notice is due.
   */
  takeStatus(status: VenueStatusMessage, now: number): number | undefined {
    this.kv.put(STATUS_KEY, status);
    const text = streamFrame(STATUS_STREAM, status);
    for (const ws of this.host.subscribersOf(STATUS_STREAM) ?? []) this.host.send(ws, text);
    return this.maintenanceNotices(now);
  }

  /**
   * Tells every dialect connection here of each maintenance whose notice is due (once per
   * announcement); returns when the next notice is due, or undefined when none is waiting.
   */
  maintenanceNotices(now: number): number | undefined {
    const status = this.kv.get<VenueStatusMessage>(STATUS_KEY);
    const held = this.kv.get<string[]>(NOTICED_KEY) ?? [];
    const { due, noticed, next } = maintenanceNotices(status?.announcements ?? [], new Set(held), now, MAINTENANCE_NOTICE_LEAD_MS);
    for (const _ of due) {
      for (const { ws } of this.host.sockets()) {
        const notice = this.host.maintenanceNoticeOf(ws, now);
        if (notice) this.host.send(ws, notice);
      }
    }
    // Written only when it changed: every alarm of the shard runs this.
    if (held.length !== noticed.size || held.some((id) => !noticed.has(id))) this.kv.put(NOTICED_KEY, [...noticed]);
    return next;
  }

  /** Deletes a key that is there: a delete is a row written, a read costs next to nothing (every alarm runs these). */
  private forget(key: string): void {
    if (this.kv.get(key) !== undefined) this.kv.delete(key);
  }
}
