/**
 * Copies of market answers held in an isolate (docs/edge-reads.md). Pure bookkeeping, with the
 * clock passed in; a read asks it twice: `next` (serve, refresh or wait) and, after a refresh,
 * `settle`. Which copy wins when two refreshes cross and how many refreshes of one key may be in
 * flight are decided here; the I/O around it is in `edge-reads.ts`.
 */

import { BoundedMap, type CacheBudget, textBytes } from "../core/bounded-map";
import { openTimeOf } from "../domain/intervals";
import type { MarketAnswer, MarketQuestion } from "../domain/market-answer";

/** The key of a question's copy: one copy per market and question. */
export function copyKey(symbol: string, question: MarketQuestion): string {
  switch (question.kind) {
    case "book":
      return `${symbol}:book:${question.depth}`;
    case "trades": {
      const { fromId, before, startTime, endTime } = question.page ?? {};
      return `${symbol}:trades:${question.limit}:${fromId ?? ""}:${before ?? ""}:${startTime ?? ""}:${endTime ?? ""}`;
    }
    case "klines": {
      // Keyed by the candles the bounds resolve to: 1 ms changes of a bound share one copy.
      const { interval, limit, startTime, endTime, offsetMs = 0 } = question.query;
      const first = startTime === undefined ? "" : openTimeOf(startTime, interval, offsetMs);
      const last = endTime === undefined ? "" : openTimeOf(endTime, interval, offsetMs);
      return `${symbol}:klines:${interval}:${limit}:${first}:${last}:${offsetMs}`;
    }
    case "window":
      return `${symbol}:window:${question.openTime}:${question.closeTime ?? ""}`;
    default:
      return `${symbol}:${question.kind}`;
  }
}

export interface Copy extends MarketAnswer {
  /** This isolate's clock when the refresh that brought the copy began: its age counts from here. */
  fetchedAt: number;
}

/** Bounded: klines questions are the client's, so only so many distinct ones are kept, in entries and in bytes (docs/security.md#bounded-memory). */
const MAX_COPIES = 1_024;
export const COPIES_MAX_BYTES = 24 * 1024 * 1024;

/** True when `a` shows a later moment of the market than `b`. */
export function isNewer(a: MarketAnswer, b: MarketAnswer): boolean {
  return a.at > b.at || (a.at === b.at && a.version > b.version);
}

/**
 * A copy is refreshed ahead once its age reaches the max age less twice what asking its market
 * took lately, and never before half nor after three quarters of the max age: a market next door
 * is asked about once per 3/4 of the max age, one far away (or failing) once per half, and a
 * refresh as slow as the last still lands before the copy expires.
 */
const REFRESH_AHEAD = { earliest: 0.5, latest: 0.75, margin: 2 } as const;
/** A slow refresh counts at once; faster ones bring the estimate down by a tenth each. */
const REFRESH_DECAY = 0.9;

/**
 * A refresh's claim lapses this long after it was taken. A refresh ends within the market's
 * timeout (2 s) of asking — unless its request was cancelled (its client went away): workerd then
 * drops the request's pending continuations, its release among them, and a claim that never
 * lapsed would hold the key's refreshes for the isolate's life (every later read of the key
 * waiting out the timeout for a 503). A refresh slower than this shares the key with one more.
 */
export const CLAIM_LEASE_MS = 3_000;

/** How long a copy of a kind of answer serves, and how many refreshes of one key may be in flight. */
export interface CopyPolicy {
  maxAgeMs: number;
  staleIfErrorMs: number;
}

/** A read's next step: serve a copy (and refresh it ahead with the claim, if any), refresh with the claim, or wait for another's refresh. */
export type EdgeStep = { serve: Copy; ahead?: number | undefined } | { refresh: number } | { wait: true };

/** What a refresh brought: a copy (the market's or the location's), and how long asking the market took (failed asks too). */
export interface RefreshOutcome {
  copy?: Copy;
  tookMs?: number;
}

/** Refreshes of one key in flight at once; a read that finds them all taken waits for one. */
const REFRESH_BOUND = 1;

export class EdgeCopies {
  private readonly copies: BoundedMap<Copy>;
  /** Per key, when each refresh in flight claimed its place. */
  private readonly claims = new Map<string, number[]>();
  private readonly refreshMs = new Map<string, number>();

  /** `budget`: the isolate's, for the copies the isolate's reads share (a test's copies count against none). */
  constructor(budget?: CacheBudget) {
    this.copies = new BoundedMap<Copy>(COPIES_MAX_BYTES, MAX_COPIES, (key, copy) => textBytes(key, copy.text), budget);
  }

  /** What the copies hold now, in bytes (at most {@link COPIES_MAX_BYTES}). */
  get bytes(): number {
    return this.copies.bytes;
  }

  /**
   * What a read of `key` does at `now`: serve a copy younger than the max age (claiming a
   * refresh ahead once it is old enough, when `ahead` allows one), else refresh it (at most
   * {@link REFRESH_BOUND} at once; with no max age every read asks), else wait. A read waiting
   * since `waitingSince` also takes a copy whose refresh began after it arrived, and one that has
   * waited too long (`mayRefresh` false) claims nothing.
   */
  next(key: string, now: number, policy: CopyPolicy, options: { ahead?: boolean; waitingSince?: number; mayRefresh?: boolean } = {}): EdgeStep {
    const { ahead = false, waitingSince, mayRefresh = true } = options;
    const copy = this.copies.get(key);
    const bound = policy.maxAgeMs > 0 ? REFRESH_BOUND : Number.POSITIVE_INFINITY;
    if (copy && (now - copy.fetchedAt < policy.maxAgeMs || (waitingSince !== undefined && copy.fetchedAt >= waitingSince))) {
      const due = ahead && now - copy.fetchedAt >= this.refreshAheadAge(key, policy.maxAgeMs);
      return { serve: copy, ahead: due ? this.claimRefresh(key, bound, now) : undefined };
    }
    const claim = mayRefresh ? this.claimRefresh(key, bound, now) : undefined;
    return claim === undefined ? { wait: true } : { refresh: claim };
  }

  /** Ends the refresh claimed at `claim` with what it brought; the copy now held, if any. */
  settle(key: string, claim: number, outcome: RefreshOutcome): Copy | undefined {
    if (outcome.tookMs !== undefined) this.noteRefresh(key, outcome.tookMs);
    this.releaseRefresh(key, claim);
    return outcome.copy ? this.offer(key, outcome.copy) : this.copies.get(key);
  }

  /** The copy a failed or slow read answers with, marked stale: one younger than the stale-if-error bound. */
  fallback(key: string, now: number, policy: CopyPolicy): Copy | undefined {
    const copy = this.copies.get(key);
    return copy && now - copy.fetchedAt < policy.staleIfErrorMs ? copy : undefined;
  }

  /**
   * Takes a refreshed copy unless the held one shows a later moment (refreshes can cross):
   * within an isolate a market's answers never go back. Returns the copy now held.
   */
  offer(key: string, copy: Copy): Copy {
    const held = this.copies.peek(key);
    if (held && !isNewer(copy, held)) {
      // The held answer is as new, but the refresh proves it still current at the later start.
      if (!isNewer(held, copy) && copy.fetchedAt > held.fetchedAt) held.fetchedAt = copy.fetchedAt;
      return held;
    }
    this.copies.set(key, copy);
    return copy;
  }

  /**
   * Claims one of at most `bound` concurrent refreshes of `key` at `now`, counting only claims
   * younger than {@link CLAIM_LEASE_MS}; the claim's moment, to release it by, or undefined when
   * all are taken.
   */
  claimRefresh(key: string, bound: number, now: number): number | undefined {
    const live = this.liveClaims(key, now);
    const taken = live.length >= bound;
    if (!taken) live.push(now);
    if (live.length === 0) this.claims.delete(key);
    else this.claims.set(key, live);
    return taken ? undefined : now;
  }

  /** Gives back the claim taken at `claimedAt` (gone already if it lapsed and was dropped). */
  releaseRefresh(key: string, claimedAt: number): void {
    const live = this.claims.get(key);
    const at = live?.indexOf(claimedAt) ?? -1;
    if (at < 0) return;
    live!.splice(at, 1);
    if (live!.length === 0) this.claims.delete(key);
  }

  /** Refreshes of `key` in flight at `now`, lapsed claims not counted. */
  refreshing(key: string, now: number): number {
    return this.liveClaims(key, now).length;
  }

  /** The claims of `key` that have not lapsed at `now`. */
  private liveClaims(key: string, now: number): number[] {
    return (this.claims.get(key) ?? []).filter((at) => now - at < CLAIM_LEASE_MS);
  }

  /** Records how long a refresh of `key` that asked its market took, failed ones included. */
  noteRefresh(key: string, tookMs: number): void {
    const previous = this.refreshMs.get(key);
    if (previous === undefined && this.refreshMs.size >= MAX_COPIES) this.refreshMs.clear();
    this.refreshMs.set(key, Math.max(tookMs, REFRESH_DECAY * (previous ?? 0)));
  }

  /** The age at which a served copy of `key` is refreshed ahead, in the background ({@link REFRESH_AHEAD}). */
  refreshAheadAge(key: string, maxAgeMs: number): number {
    // A key never refreshed is treated as far away: half the max age.
    const margin = REFRESH_AHEAD.margin * (this.refreshMs.get(key) ?? maxAgeMs);
    return Math.min(REFRESH_AHEAD.latest * maxAgeMs, Math.max(REFRESH_AHEAD.earliest * maxAgeMs, maxAgeMs - margin));
  }
}
