import { sleep } from "../core/cross-request-wait";
import { groupOf } from "../core/market-groups";
import { accessGuard, keyUsageLedgerAt, marketObject, usageLedgerOf } from "../core/object-ids";
import { ProblemError, type ProblemResult, toProblemResult } from "../core/problem";
import { unseal } from "../core/seal";
import { withTimeout } from "../core/time-limit";
import type { MarketAnswer, MarketQuestion } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import { logFailure } from "../logs/log";
import type { MarketObject } from "../market/market-object";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { SessionLink, sessionIdleMs } from "../rpc-sessions/session-link";
import { HeldUsage } from "./held-usage";
import { KeyBook, type KeyEntry } from "./key-book";
import { principalOfKey } from "./keys";
import { PrincipalWindows, windowsFull } from "./principal-windows";
import { importSecret } from "./signature";
import { type Authorized, type SignedCheck, verifySigned } from "./signed-check";
import type { Admission } from "./sliding-window";

/**
 * Windows one gate holds at most (under 1 KB each, 10 slots at most): a window lives about a second
 * past its last admission, so this is far above the admissions a second one object decides
 * (docs/limits.md#address-gates).
 */
export const GATE_MAX_WINDOWS = 20_000;
/**
 * How long a gate waits for a market's answer before it answers with the admission alone: within
 * the reader's own 2 s (MARKET_TIMEOUT_MS), so a slow host delays the read's admission no more than
 * it delays its refresh, and the read still ends in a stale copy or 503, never a hang.
 */
const GATE_HOST_WAIT_MS = 1_500;

/** Account keys' records one gate holds at most (docs/limits.md#key-gates): a few hundred bytes each. */
const GATE_MAX_KEYS = 20_000;
/**
 * A held key record is read again from its guard after this long. A change is told to the gate before
 * it is answered, and told again until it is heard; this only bounds what a change told by no one
 * (a record edited in storage) would leave standing, at a read a key-day.
 */
const KEY_RECORD_MAX_AGE_MS = 24 * 3_600_000;
/**
 * A gate stores the moment of an admission at most this often (one row), so one started again — a
 * deploy, a crash — knows whether its windows could still hold admissions it no longer remembers.
 */
const ACTIVE_NOTE_EVERY_MS = 1_000;
const ACTIVE_KEY = "activeAt";

/**
 * How long a gate started at `now` waits before it admits anything (docs/limits.md#address-gates):
 * until no window of its last life can hold an admission — its last noted one was at `activeAt`,
 * later ones within ACTIVE_NOTE_EVERY_MS of it, each held a second. Never longer than that.
 */
function restartWait(activeAt: number | undefined, now: number): number {
  if (activeAt === undefined) return 0;
  return Math.min(ACTIVE_NOTE_EVERY_MS + 1_000, Math.max(0, activeAt + ACTIVE_NOTE_EVERY_MS + 1_000 - now));
}

/** A key's last use is told to its guard at most this often (the guard stores it past the ledger's 30 days). */
const LAST_USE_TELL_EVERY_MS = 24 * 3_600_000;

/** A gate's word on one signed read: the admission (or the problem), and the market's answer when admitted. */
export interface GatedSignedRead {
  authorized: Authorized | ProblemResult;
  answer?: MarketAnswer;
}

/** A gate's word on one request; `undefined` admission: no window could be held (503, fail closed). */
export interface GatedRead {
  admission: Admission | undefined;
  /** The market's answer, when the request was admitted and its host answered. */
  answer?: MarketAnswer;
}

/**
 * One of `ADDRESS_GATES` objects, named by a hash of the client address (docs/limits.md#address-gates)
 * or of an account key (docs/limits.md#key-gates): it counts the public limit of the addresses
 * hashed to it and the signed limit of its keys, exactly (each its own window), checks its keys'
 * signatures, counts their usage, and carries the market reads of both. A read's one object call —
 * the exact limit's, which every request makes — comes here, and when the read's edge copy is old the gate asks the market's host
 * through an RPC session it keeps open (calls on it are not billed), so the refresh rides on the
 * call the limit already made. The sessions keep a busy gate from hibernating: its duration is the
 * price of the refreshes it carries (docs/capacity.md#the-whole-bill).
 */
export class AddressGate extends MeteredObject {
  private readonly windows = new PrincipalWindows(GATE_MAX_WINDOWS);
  /** One session a market host (`group:<n>`), opened on the first read of one of its markets. */
  private readonly hosts = new Map<number, SessionLink<MarketObject>>();

  /** Account keys' records, read from their guards (docs/limits.md#key-gates). */
  private readonly keys: KeyBook;
  /** Account keys' usage, handed to their ledgers every few seconds. */
  private readonly usage: HeldUsage;
  /** When this gate last stored the moment of an admission. */
  private activeNotedAt = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "gate");
    this.keys = new KeyBook(GATE_MAX_KEYS, KEY_RECORD_MAX_AGE_MS, (keyId) => accessGuard(env, principalOfKey(keyId)).recordForGate());
    this.usage = new HeldUsage((ledger, held) => keyUsageLedgerAt(env, ledger).add(held), usageLedgerOf);
    // Started again while its last life's windows may still hold admissions: nothing is admitted
    // until they would have emptied, so a restart never starts a window again (requests wait, ≤ 2 s).
    const wait = restartWait(this.ctx.storage.kv.get<number>(ACTIVE_KEY), Date.now());
    if (wait > 0) void ctx.blockConcurrencyWhile(() => sleep(wait));
  }

  /** Every admission of this gate: its windows, with the moment stored at most once a second. */
  private admitted(principal: string, limit: number, now: number): Admission | undefined {
    const admission = this.windows.admit(principal, limit, now);
    if (admission?.allowed && now - this.activeNotedAt >= ACTIVE_NOTE_EVERY_MS) {
      this.activeNotedAt = now;
      this.ctx.storage.kv.put(ACTIVE_KEY, now);
    }
    return admission;
  }

  /** Rate admission of `principal` only (a request that reads no market copy, or whose copy is fresh). */
  admit(principal: string, limit: number, now = Date.now()): Admission | undefined {
    return this.admitted(principal, limit, now);
  }

  /**
   * Admits one request of `principal` and, if admitted, answers its market question from the
   * market's host. A host that fails or is slow leaves the admission standing and the answer out:
   * the reader serves a recent copy or 503, as for any failed refresh.
   */
  async read(principal: string, limit: number, market: MarketConfig, question: MarketQuestion): Promise<GatedRead> {
    const admission = this.admitted(principal, limit, Date.now());
    if (!admission?.allowed) return { admission };
    return { admission, answer: await this.answer(market, question) };
  }

  /**
   * The market's answer through its host's session, or undefined when the host fails or is slow.
   * A session into a host that has restarted since is broken, and its next call fails at once: that
   * one is asked again on a new session, within the same wait, so a host's restart does not make
   * every gate's next refresh fail (and its reader get an older copy).
   */
  private async answer(market: MarketConfig, question: MarketQuestion): Promise<MarketAnswer | undefined> {
    const deadline = Date.now() + GATE_HOST_WAIT_MS;
    const expiry = new Error(`no answer within ${GATE_HOST_WAIT_MS} ms`);
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeout(this.hostOf(market).call("answer", market, question), Math.max(0, deadline - Date.now()), expiry);
      } catch (error) {
        if (attempt === 1 && error !== expiry && Date.now() < deadline) continue;
        logFailure("gate: market host did not answer", { symbol: market.symbol, error });
        return undefined;
      }
    }
  }

  /**
   * Checks one signed request of an account key and admits it against the key's window, as its guard
   * did (docs/limits.md#key-gates): the record as the guard stores it, the same checks in the same
   * order, the same exact window; its use counted here and handed to the key's ledger.
   */
  authorize(keyId: string, check: SignedCheck): Promise<Authorized | ProblemResult> {
    return this.checkSigned(keyId, check);
  }

  /** {@link authorize}'s work, apart from the metered method: a read that carries it is one request, not two. */
  private async checkSigned(keyId: string, check: SignedCheck): Promise<Authorized | ProblemResult> {
    try {
      const entry = await this.keys.entryOf(keyId, Date.now());
      await verifySigned(entry?.record ?? null, () => this.secretOf(entry as KeyEntry), check, Date.now());
      const admittedAt = Date.now();
      const admission = this.admitted(principalOfKey(keyId), check.limit, admittedAt);
      if (!admission) throw windowsFull();
      this.usage.count(keyId, admittedAt, !admission.allowed);
      if (admission.allowed) this.noteUse(keyId, entry as KeyEntry, admittedAt);
      return admission;
    } catch (error) {
      if (error instanceof ProblemError) return toProblemResult(error);
      throw error;
    }
  }

  /** {@link authorize}, and when admitted the market's answer, as {@link read} for an address. */
  async authorizeRead(keyId: string, check: SignedCheck, market: MarketConfig, question: MarketQuestion): Promise<GatedSignedRead> {
    const authorized = await this.checkSigned(keyId, check);
    if (!("allowed" in authorized) || !authorized.allowed) return { authorized };
    return { authorized, answer: await this.answer(market, question) };
  }

  /** The key changed at its guard (revoked): its record is read again on its next request. */
  forgetKey(keyId: string): void {
    this.keys.forget(keyId);
  }

  /** Hands the usage held to the ledgers (a usage read asks first, so it sees every request answered before it). */
  handOverUsage(): Promise<void> {
    return this.usage.handOver();
  }

  private secretOf(entry: KeyEntry): Promise<CryptoKey> {
    if (!entry.cryptoKey) {
      const imported = unseal(this.env.SEALING_KEY, entry.record.sealedSecret, entry.record.keyId).then(importSecret);
      // A secret that could not be unsealed is tried again on the next request.
      imported.catch(() => {
        if (entry.cryptoKey === imported) entry.cryptoKey = undefined;
      });
      entry.cryptoKey = imported;
    }
    return entry.cryptoKey;
  }

  /** Tells the key's guard of its use once a day: the guard keeps the last use past the ledger's 30 days. */
  private noteUse(keyId: string, entry: KeyEntry, at: number): void {
    if (entry.lastUseStored !== null && at - entry.lastUseStored < LAST_USE_TELL_EVERY_MS) return;
    entry.lastUseStored = at;
    accessGuard(this.env, principalOfKey(keyId))
      .noteUseAt(at)
      .catch((error: unknown) => logFailure("gate: last use not told", { keyId, error }));
  }

  private hostOf(market: MarketConfig): SessionLink<MarketObject> {
    const group = groupOf(market);
    let link = this.hosts.get(group);
    if (!link) this.hosts.set(group, (link = new SessionLink<MarketObject>(() => marketObject(this.env, market).openSession(), sessionIdleMs(this.env))));
    return link;
  }

  /** Windows held now (the operator's view, and the tests'). */
  windowsHeld(): number {
    return this.windows.size;
  }
}

meterRequests(AddressGate, ["admit", "read", "authorize", "authorizeRead", "forgetKey", "handOverUsage", "windowsHeld"]);
