import { isolateCaches } from "../core/bounded-map";
import { sleep } from "../core/cross-request-wait";
import { marketObject, objectCalls, priceIndex } from "../core/object-ids";
import { ProblemError, problem } from "../core/problem";
import { msSetting } from "../core/settings";
import { withTimeout } from "../core/time-limit";
import type { CarriedRefresh, MarketAnswer, MarketQuestion, ReadCarrier } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { VenueAnswerKind } from "../groups/venue-board";
import { type Copy, type CopyPolicy, copyKey, EdgeCopies, type RefreshOutcome } from "./edge-copies";
import { shareCopy, sharedCopy } from "./location-copies";

/**
 * The edge read path (docs/edge-reads.md): market answers served from copies in this isolate,
 * shared with the location's other isolates through the Cache API, never older than
 * `MARKET_READ_MAX_AGE_MS`. A busy key is refreshed ahead, in the background, by the request
 * that finds its copy old enough (between half and three quarters of that age, by how long its
 * refreshes take), so steady load never waits for the market.
 */

const DEFAULT_MAX_AGE_MS = 250;
const DEFAULT_STALE_IF_ERROR_MS = 5_000;
/** The all-market answers change at most once a second (docs/api.md#all-markets). */
const DEFAULT_VENUE_MAX_AGE_MS = 1_000;
/** A market that has not answered by then counts as failed (the copy or 503 answers instead). */
const MARKET_TIMEOUT_MS = 2_000;
/** How often a waiting request looks at the copies again (it may not await another request's promise). */
const WAIT_STEP_MS = 1;

/** Read once per env object: every read asks, and the variables do not change while it lives. */
const policies = new WeakMap<Env, { market: CopyPolicy; venue: CopyPolicy }>();

function policiesOf(env: Env): { market: CopyPolicy; venue: CopyPolicy } {
  let held = policies.get(env);
  if (!held) {
    const staleIfErrorMs = msSetting(env.MARKET_READ_STALE_IF_ERROR_MS, DEFAULT_STALE_IF_ERROR_MS);
    held = {
      market: { maxAgeMs: msSetting(env.MARKET_READ_MAX_AGE_MS, DEFAULT_MAX_AGE_MS), staleIfErrorMs },
      venue: { maxAgeMs: msSetting(env.VENUE_READ_MAX_AGE_MS, DEFAULT_VENUE_MAX_AGE_MS), staleIfErrorMs },
    };
    policies.set(env, held);
  }
  return held;
}

/** The policy of one market's answers. */
export function edgePolicy(env: Env): CopyPolicy {
  return policiesOf(env).market;
}

/** What a read needs of its request: the bindings, a way to finish work after answering, and its admission to carry. */
export interface ReadContext {
  env: Env;
  waitUntil?: (promise: Promise<unknown>) => void;
  carrier?: ReadCarrier | undefined;
}

/** A refresh's ask: through the request's admission when it can carry it (then released once done), else `ask`. */
function carriedAsk(ctx: ReadContext, ask: () => Promise<MarketAnswer>, carry?: (refresh: CarriedRefresh) => Promise<MarketAnswer>) {
  const taken = carry ? ctx.carrier?.take() : undefined;
  if (!taken || !carry) return { ask, release: () => {} };
  return { ask: () => carry(taken), release: () => taken.release() };
}

/** An answer as served: the market's text, the moment it shows, its age, and whether it is past the max age. */
export interface EdgeRead {
  text: string;
  asOf: number;
  ageMs: number;
  stale: boolean;
}

const copies = new EdgeCopies(isolateCaches);

/** What this isolate's market copies hold, in bytes (docs/security.md#bounded-memory). */
export function heldCopyBytes(): number {
  return copies.bytes;
}

/**
 * Brings what the refresh claimed at `claim` asks for: the location's shared copy if another
 * isolate refreshed it within half the max age, else the market's answer (then shared), and
 * settles the claim with it. The copy held after, which may be a newer one than it brought.
 */
async function refresh(ctx: ReadContext, policy: CopyPolicy, key: string, claim: number, asking: ReturnType<typeof carriedAsk>): Promise<Copy> {
  const outcome: RefreshOutcome = {};
  let held: Copy | undefined;
  try {
    const fetchedAt = Date.now();
    const shared = policy.maxAgeMs > 0 ? await sharedCopy(key) : undefined;
    if (shared && fetchedAt - shared.fetchedAt < policy.maxAgeMs / 2) outcome.copy = shared;
    else {
      try {
        outcome.copy = { ...(await withTimeout(asking.ask(), MARKET_TIMEOUT_MS)), fetchedAt };
      } finally {
        // Only refreshes that asked the market: how far it is sets how early to refresh ahead (a
        // quick hit in the location's cache says nothing of the next refresh that must ask it).
        outcome.tookMs = Date.now() - fetchedAt;
      }
      // Kept as long as it can serve as a stale-if-error answer; freshness is judged by fetchedAt.
      if (policy.maxAgeMs > 0) ctx.waitUntil?.(shareCopy(key, outcome.copy, policy.staleIfErrorMs));
    }
  } finally {
    asking.release();
    held = copies.settle(key, claim, outcome);
  }
  return held!;
}

function served(copy: Copy, now: number, stale: boolean): EdgeRead {
  if (copy.problem) {
    const { code, detail, extras } = copy.problem;
    throw problem(code, detail, extras);
  }
  return { text: copy.text, asOf: copy.at, ageMs: Math.max(0, now - copy.fetchedAt), stale };
}

/**
 * Answers `key` one way: its copy if fresh (refreshing it ahead, in the background, once it is
 * old enough), else a refresh, else a wait for another read's refresh. If the market fails or is
 * slow, a copy younger than the stale-if-error bound answers, marked stale; past it, 503
 * `UNAVAILABLE` — never a hang.
 */
async function readThroughEdge(
  ctx: ReadContext,
  key: string,
  ask: () => Promise<MarketAnswer>,
  policy = edgePolicy(ctx.env),
  carry?: (refresh: CarriedRefresh) => Promise<MarketAnswer>,
): Promise<EdgeRead> {
  const arrivedAt = Date.now();
  let now = arrivedAt;
  let step = copies.next(key, now, policy, { ahead: ctx.waitUntil !== undefined });
  while ("wait" in step) {
    await sleep(WAIT_STEP_MS);
    now = Date.now();
    step = copies.next(key, now, policy, { waitingSince: arrivedAt, mayRefresh: now - arrivedAt < MARKET_TIMEOUT_MS });
    if ("wait" in step && now - arrivedAt >= MARKET_TIMEOUT_MS) return staleOrUnavailable(policy, key, now);
  }
  if ("serve" in step) {
    if (step.ahead !== undefined) ctx.waitUntil!(refresh(ctx, policy, key, step.ahead, carriedAsk(ctx, ask, carry)).catch(() => undefined));
    return served(step.serve, now, false);
  }
  try {
    return served(await refresh(ctx, policy, key, step.refresh, carriedAsk(ctx, ask, carry)), Date.now(), false);
  } catch (error) {
    if (error instanceof ProblemError) throw error;
    return staleOrUnavailable(policy, key, Date.now());
  }
}

function staleOrUnavailable(policy: CopyPolicy, key: string, now: number): EdgeRead {
  const fallback = copies.fallback(key, now, policy);
  if (fallback) return served(fallback, now, true);
  throw problem("UNAVAILABLE", "the market did not answer in time and no recent copy is held; try again shortly", {}, { "Retry-After": "1" });
}

/**
 * One market question through the edge copies.
 *
 * @example
 * const read = await readMarket({ env: c.env, waitUntil }, "BTCUSDT", { kind: "ticker" });
 */
export function readMarket(ctx: ReadContext, market: MarketConfig, question: MarketQuestion): Promise<EdgeRead> {
  const ask = () => {
    objectCalls.marketReads += 1;
    return marketObject(ctx.env, market).answer(market, question);
  };
  return readThroughEdge(ctx, copyKey(market.symbol, question), ask, edgePolicy(ctx.env), (refresh) => refresh.carry(market, question, ask));
}

/**
 * An all-market answer through the edge copies, from the price index's ready text: one object
 * call per refresh of the copy, whatever the number of markets (docs/api.md#all-markets).
 *
 * @example
 * const read = await readVenue({ env: c.env, waitUntil }, "ticker");
 */
export function readVenue(ctx: ReadContext, kind: VenueAnswerKind | "status"): Promise<EdgeRead> {
  return readThroughEdge(
    ctx,
    `*:${kind}`,
    () => {
      objectCalls.venueReads += 1;
      const index = priceIndex(ctx.env);
      return kind === "status" ? index.status() : index.answer(kind);
    },
    policiesOf(ctx.env).venue,
  );
}
