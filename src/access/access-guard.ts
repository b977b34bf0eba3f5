import { keyGate, keyUsageLedger, streamHub } from "../core/object-ids";
import { ProblemError, type ProblemResult, toProblemResult } from "../core/problem";
import { unseal } from "../core/seal";
import type { MarketGrant } from "../domain/market-config";
import { logFailure } from "../logs/log";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { type ConnectionLease, confirmLease, decideLease, EDGE_HOLDER, returnLease } from "./connection-leases";
import { isGatedKey, type KeyRecord, principalOfKey } from "./keys";
import { type LoginAttempts, type LoginReservation, type LoginScope, type LoginSettlement, reserveLogin, settleLogin } from "./login-throttle";
import { signedWindow } from "./rate-limit";
import { importSecret } from "./signature";
import { type Authorized, type SignedCheck, verifySigned } from "./signed-check";
import { type Admission, SlidingWindow } from "./sliding-window";

/** A key's standing, as open connections re-check it (docs/security.md#rights-on-open-connections). */
export interface KeyStatus {
  exists: boolean;
  lastUsedAt: number | null;
  revokedAt: number | null;
  expiresAt: number | null;
  allowCidrs: string[];
  /** A publishing key's markets; null for an account key. */
  markets: MarketGrant | null;
}

/** What the operator may change on a publishing key after it is issued. */
export interface KeyAmendment {
  markets?: MarketGrant;
  allowCidrs?: string[];
  expiresAt?: number | null;
}

/** Storage key of the sign-in throttle's record, apart from the API key's. */
const LOGIN_KEY = "login";
/**
 * Storage key of the key's last use, stored by its guard at most once a day (a row a key-day):
 * its ledger knows the exact moment for the 30 days it keeps, this outlasts them.
 */
const LAST_USE_KEY = "lastUsedAt";
const LAST_USE_STORE_EVERY_MS = 24 * 3_600_000;
/** Storage key of the tries to tell an account key's gate of a change it has not heard (none: told). */
const GATE_UNTOLD_KEY = "gateUntold";
/** Storage key of the shards a revocation did not reach yet, and the tries so far. */
const SHARDS_UNTOLD_KEY = "shardsUntold";
/** The longest wait between two tries to tell a gate or a shard. */
const GATE_RETELL_MAX_MS = 60_000;
/** Storage key of the principal's stream connection leases (docs/limits.md#stream-connections). */
const CONNECTIONS_KEY = "connections";

/**
 * One per principal (`key:<id>`, `ip:<addr>`, `gateway:<id>`). Answers "who is this, may they,
 * are they within their rate" in one call. The rate window lives in memory: losing it on
 * eviction only forgets at most one second of history.
 */
export class AccessGuard extends MeteredObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "guard");
  }

  /** Per scope (a key's reads, its publishing; one for any other principal), the rate window. */
  private readonly windows = new Map<string, SlidingWindow>();
  private record: KeyRecord | null | undefined;
  private cryptoKey: Promise<CryptoKey> | undefined;
  /** The key's last admitted use: held in memory, and as stored (at most once a day). */
  private lastUsedAt: number | null = null;
  private storedLastUse: number | null = null;
  /** Uses told to the ledger and not yet answered: a usage read waits for them. */
  private readonly telling = new Set<Promise<void>>();

  /** Lease asks, one after another: one that must ask shards first finishes before the next counts. */
  private leaseQueue: Promise<unknown> = Promise.resolve();

  /** The principal's window of `scope`, made anew when its limit changes. */
  private windowFor(limit: number, scope = "requests"): SlidingWindow {
    let window = this.windows.get(scope);
    if (window?.limit !== limit) this.windows.set(scope, (window = new SlidingWindow(limit)));
    return window;
  }

  /** Rate admission only (gateways). `now` is the guard's clock, passed in only by tests. */
  admit(limit: number, now = Date.now()): Admission {
    return this.windowFor(limit).admit(now);
  }

  /**
   * Reserves one sign-in attempt of this principal (`login:<email>` or `ip:<address>`), or
   * refuses it (`login-throttle.ts`). Synchronous storage and no await: concurrent attempts are
   * decided one after another, each seeing the reservations before it.
   */
  reserveLogin(scope: LoginScope, now = Date.now()): LoginReservation {
    const reservation = reserveLogin(scope, this.ctx.storage.kv.get<LoginAttempts>(LOGIN_KEY), now);
    if (reservation.allowed) this.ctx.storage.kv.put(LOGIN_KEY, reservation.attempts);
    return reservation;
  }

  /** Reports a reserved attempt that did not fail (a failure is counted already). */
  settleLogin(scope: LoginScope, outcome: LoginSettlement, now = Date.now()): void {
    this.ctx.storage.kv.put(LOGIN_KEY, settleLogin(scope, this.ctx.storage.kv.get<LoginAttempts>(LOGIN_KEY), outcome, now));
  }

  private connectionLeases(): ConnectionLease[] {
    return this.ctx.storage.kv.get<ConnectionLease[]>(CONNECTIONS_KEY) ?? [];
  }

  /**
   * A shard asks for a lease before it upgrades one of the principal's connections (one call per
   * upgrade). With `limit` held, the shards holding them are asked which are still open (a shard
   * that died returns nothing), and only then is the connection refused.
   */
  takeConnection(id: string, shard: string, limit: number): Promise<boolean> {
    const asked = this.leaseQueue.then(async () => {
      const before = this.connectionLeases();
      const ask = await decideLease(
        () => this.connectionLeases(),
        { id, shard, at: Date.now() },
        limit,
        (holder, ids) => this.askShard(holder, ids),
      );
      // Stored when anything changed, a confirmation's time too: a lease is kept until a minute
      // after its shard last confirmed it, not after it was granted.
      if (ask.leases.length !== before.length || ask.leases.some((l, i) => l.id !== before[i]?.id || l.at !== before[i]?.at))
        this.ctx.storage.kv.put(CONNECTIONS_KEY, ask.leases);
      return ask.granted;
    });
    this.leaseQueue = asked.catch(() => undefined);
    return asked;
  }

  /** The ids of `ids` that `shard` still holds, or undefined when it does not answer. */
  private askShard = async (shard: string, ids: string[]): Promise<ReadonlySet<string> | undefined> => {
    if (shard === EDGE_HOLDER) return undefined; // confirms itself (confirmConnection)
    try {
      return new Set(await streamHub(this.env, shard).leasesHeld(ids));
    } catch (error) {
      logFailure("lease check failed", { shard, error });
      return undefined;
    }
  };

  /** A connection an isolate holds itself says it is open (every EDGE_CONFIRM_MS). */
  confirmConnection(id: string, now = Date.now()): void {
    const held = this.connectionLeases();
    if (held.some((l) => l.id === id)) this.ctx.storage.kv.put(CONNECTIONS_KEY, confirmLease(held, id, now));
  }

  /** A shard returns a connection's lease when it closes (one call per close). */
  returnConnection(id: string): void {
    const held = this.connectionLeases();
    const left = returnLease(held, id);
    if (left.length !== held.length) this.ctx.storage.kv.put(CONNECTIONS_KEY, left);
  }

  /** The leases held now (the operator's view, and the tests'). */
  connectionsHeld(): ConnectionLease[] {
    return this.connectionLeases();
  }

  private async keyRecord(): Promise<KeyRecord | null> {
    if (this.record === undefined) {
      this.record = (await this.ctx.storage.get<KeyRecord>("key")) ?? null;
      this.storedLastUse = this.ctx.storage.kv.get<number>(LAST_USE_KEY) ?? null;
      this.lastUsedAt ??= this.storedLastUse;
    }
    return this.record;
  }

  async installKey(record: KeyRecord): Promise<void> {
    await this.ctx.storage.put("key", record);
    this.record = record;
    this.cryptoKey = undefined;
  }

  /**
   * Revocation lands here first, and an account key's gate is told before this answers, so the very
   * next request with the key fails; the shards holding the key's stream connections (its leases)
   * are told at once, so they close them now. A shard not reached finds it at its own next check
   * (KEY_RECHECK_EVERY_MS): the revocation stands either way. False when the gate was not reached:
   * the caller says so (503) and asks again, which tells the gate again (docs/limits.md#key-gates).
   */
  async revokeKey(now = Date.now()): Promise<boolean> {
    const record = await this.keyRecord();
    if (!record) return true;
    if (record.revokedAt === null) {
      const revoked = { ...record, revokedAt: now };
      await this.ctx.storage.put("key", revoked);
      this.record = revoked;
      this.cryptoKey = undefined;
      const shards = new Set(this.connectionLeases().map((lease) => lease.shard));
      shards.delete(EDGE_HOLDER);
      await this.tellShards(record.keyId, [...shards]);
    }
    return this.tellGate(record.keyId);
  }

  /**
   * Tells the shards holding the key's connections that it ended, so they close them now. A shard
   * not reached is told again from the guard's alarm (its own check would close them within
   * KEY_RECHECK_EVERY_MS anyway; this is sooner).
   */
  private async tellShards(keyId: string, shards: readonly string[]): Promise<void> {
    const principal = principalOfKey(keyId);
    const untold: string[] = [];
    await Promise.all(
      shards.map((shard) =>
        streamHub(this.env, shard)
          .keyEnded(principal, "the API key was revoked")
          .catch((error: unknown) => {
            logFailure("key revocation not told", { shard, error });
            untold.push(shard);
          }),
      ),
    );
    if (untold.length === 0) {
      if (this.ctx.storage.kv.get(SHARDS_UNTOLD_KEY) !== undefined) this.ctx.storage.kv.delete(SHARDS_UNTOLD_KEY);
      return;
    }
    const before = this.ctx.storage.kv.get<{ shards: string[]; tries: number }>(SHARDS_UNTOLD_KEY);
    const tries = (before?.tries ?? 0) + 1;
    this.ctx.storage.kv.put(SHARDS_UNTOLD_KEY, { shards: untold, tries });
    await this.ctx.storage.setAlarm(Date.now() + Math.min(GATE_RETELL_MAX_MS, 1_000 * 2 ** Math.min(tries, 6)));
  }

  /**
   * Tells an account key's gate to forget what it holds of the key (a publishing key has none). A
   * gate not reached is told again from the guard's alarm until it is (a row while it fails), so the
   * change reaches it even if nobody asks again.
   */
  private async tellGate(keyId: string): Promise<boolean> {
    if (!isGatedKey(keyId)) return true;
    try {
      await keyGate(this.env, keyId).forgetKey(keyId);
      if (this.ctx.storage.kv.get(GATE_UNTOLD_KEY) !== undefined) this.ctx.storage.kv.delete(GATE_UNTOLD_KEY);
      return true;
    } catch (error) {
      logFailure("key change not told to its gate", { keyId, error });
      const tries = (this.ctx.storage.kv.get<number>(GATE_UNTOLD_KEY) ?? 0) + 1;
      this.ctx.storage.kv.put(GATE_UNTOLD_KEY, tries);
      await this.ctx.storage.setAlarm(Date.now() + Math.min(GATE_RETELL_MAX_MS, 1_000 * 2 ** Math.min(tries, 6)));
      return false;
    }
  }

  /** Changes a publishing key's markets, allow-list or expiry; open channels take it up within their check interval. */
  async amendKey(change: KeyAmendment): Promise<KeyRecord | null> {
    const record = await this.keyRecord();
    if (!record || record.revokedAt !== null || record.markets === undefined) return null;
    const amended = { ...record, ...change };
    await this.ctx.storage.put("key", amended);
    this.record = amended;
    return amended;
  }

  async keyStatus(): Promise<KeyStatus> {
    const record = await this.keyRecord();
    return {
      exists: record !== null,
      lastUsedAt: this.lastUsedAt,
      revokedAt: record?.revokedAt ?? null,
      expiresAt: record?.expiresAt ?? null,
      allowCidrs: record?.allowCidrs ?? [],
      markets: record?.markets ?? null,
    };
  }

  /**
   * Verifies a signed request and admits it against the key's window (docs/signing.md,
   * docs/limits.md): a publishing key's requests (an account key's are its gate's, `key-book.ts`).
   */
  async authorize(check: SignedCheck): Promise<Authorized | ProblemResult> {
    try {
      const record = await verifySigned(await this.keyRecord(), () => this.secretOf(), check, Date.now());
      // Admitted at the moment of admission, not when the check began: the awaits above may
      // have let other requests of this key through first.
      const admittedAt = Date.now();
      const admission = this.windowFor(check.limit, signedWindow(check.permission).scope).admit(admittedAt);
      if (admission.allowed) this.noteUse(admittedAt);
      this.tellLedger(record.keyId, admittedAt, !admission.allowed);
      return check.permission === "publish" ? { ...admission, markets: record.markets } : admission;
    } catch (error) {
      if (error instanceof ProblemError) return toProblemResult(error);
      this.cryptoKey = undefined;
      throw error;
    }
  }

  private secretOf(): Promise<CryptoKey> {
    const record = this.record;
    if (!record) throw new Error("no key record to unseal");
    this.cryptoKey ??= unseal(this.env.SEALING_KEY, record.sealedSecret, record.keyId).then(importSecret);
    return this.cryptoKey;
  }

  /**
   * The key's record for its gate (docs/limits.md#key-gates), with the last use stored here: the
   * gate checks the key's requests from it until told the key changed ({@link revokeKey}).
   */
  async recordForGate(): Promise<{ record: KeyRecord; lastUseStored: number | null } | null> {
    const record = await this.keyRecord();
    return record ? { record, lastUseStored: this.storedLastUse } : null;
  }

  /** A gate's word that the key was used at `at` (at most once a day a key): stored past the ledger's 30 days. */
  noteUseAt(at: number): void {
    if (at > (this.lastUsedAt ?? 0)) this.lastUsedAt = at;
    this.noteUse(at);
  }

  /**
   * Counts a signed request (a 429 too) in the key's ledger: one call, not awaited by the request.
   * A failed call loses that count (a statistic, logged), never the request.
   */
  private tellLedger(keyId: string, at: number, refused: boolean): void {
    const told: Promise<void> = keyUsageLedger(this.env, keyId)
      .count(keyId, at, refused)
      .catch((error: unknown) => logFailure("key usage not counted", { keyId, error }))
      .finally(() => this.telling.delete(told));
    this.telling.add(told);
  }

  /** The key was used now: held in memory, and stored once a day. */
  private noteUse(now: number): void {
    this.lastUsedAt = Math.max(this.lastUsedAt ?? 0, now);
    if (now - (this.storedLastUse ?? 0) < LAST_USE_STORE_EVERY_MS) return;
    this.ctx.storage.kv.put(LAST_USE_KEY, now);
    this.storedLastUse = now;
  }

  /** Resolves once the uses already told to the key's ledger have reached it: a usage read after a request sees it. */
  async usageTold(): Promise<void> {
    await Promise.all(this.telling);
  }

  /**
   * A key change its gate was not told of, or a revocation the shards were not, is told again (the
   * alarm is set again while it fails).
   */
  override async alarm(): Promise<void> {
    const record = await this.keyRecord();
    if (!record) return;
    const shards = this.ctx.storage.kv.get<{ shards: string[] }>(SHARDS_UNTOLD_KEY)?.shards;
    if (shards) await this.tellShards(record.keyId, shards);
    if (this.ctx.storage.kv.get(GATE_UNTOLD_KEY) !== undefined) await this.tellGate(record.keyId);
  }
}

meterRequests(AccessGuard, [
  "confirmConnection",
  "admit",
  "reserveLogin",
  "settleLogin",
  "takeConnection",
  "returnConnection",
  "connectionsHeld",
  "installKey",
  "revokeKey",
  "amendKey",
  "keyStatus",
  "authorize",
  "usageTold",
  "recordForGate",
  "noteUseAt",
  "alarm",
]);
