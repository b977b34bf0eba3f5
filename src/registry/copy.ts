import { pollUntil, sleep } from "../core/cross-request-wait";
import { registryObject } from "../core/object-ids";
import { problem } from "../core/problem";
import { msSetting } from "../core/settings";
import { type MarketConfig, RegistryIndex, type RegistrySnapshot } from "../domain/market-config";
import { logFailure } from "../logs/log";
import type { RegistryText } from "./registry-object";

/** How often an isolate asks whether its registry copy is current (production; `npm start` sets 1 s). */
const DEFAULT_REGISTRY_REFRESH_MS = 10_000;
/** Past this many refresh intervals without an answer, a request waits for the registry instead of serving the copy. */
const SERVE_STALE_INTERVALS = 6;

/**
 * An isolate's copy of the registry (docs/operations.md#listing-markets), with the clock and the
 * source passed in. A request finds the copy current, or starts one background refresh and is
 * served the copy it has; only an isolate with no copy (or one far past its interval) waits.
 */
/** A refresh under way: the request that began it awaits its promise; others poll `settled`. */
interface Refresh {
  promise: Promise<RegistryIndex>;
  startedAt: number;
  settled: boolean;
  failed: boolean;
}

/** A refresh begun by another request is waited for at most this long (a registry answer takes a few ms). */
export const MAX_REFRESH_WAIT_MS = 2_000;

export class RegistryCopy {
  private held: { epoch: string; index: RegistryIndex } | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private refreshing: Refresh | undefined;

  constructor(private readonly ask: (epoch: string, version: number) => Promise<RegistryText | null>) {}

  get index(): RegistryIndex | undefined {
    return this.held?.index;
  }

  /**
   * The copy, current within `intervalMs` of `now` as far as this isolate can tell. One refresh at a
   * time: a request that finds another request's refresh under way polls for its end on its own
   * timers (`core/cross-request-wait.ts`), and one unfinished after MAX_REFRESH_WAIT_MS is forgotten
   * — its request may have ended, and its answer with it.
   */
  async ensure(
    now: number,
    intervalMs: number,
    waitUntil?: (promise: Promise<unknown>) => void,
    clock: () => number = Date.now,
    wait: (ms: number) => Promise<void> = sleep,
  ): Promise<RegistryIndex> {
    const held = this.held;
    if (held && now - this.checkedAt < intervalMs) return held.index;
    if (this.refreshing && clock() - this.refreshing.startedAt >= MAX_REFRESH_WAIT_MS) this.refreshing = undefined;
    const mine = this.refreshing === undefined;
    const refresh = this.refreshing ?? this.startRefresh(now, clock());
    if (held && intervalMs > 0 && now - this.checkedAt < SERVE_STALE_INTERVALS * intervalMs) {
      if (mine) waitUntil?.(refresh.promise.catch((error: unknown) => logFailure("registry refresh failed", { error })));
      return held.index;
    }
    if (mine) {
      try {
        return await refresh.promise;
      } catch (error) {
        return this.unanswered(held, String(error));
      }
    }
    const ended = await pollUntil(() => refresh.settled, refresh.startedAt + MAX_REFRESH_WAIT_MS, clock, wait);
    return ended && !refresh.failed ? this.held!.index : this.unanswered(held, ended ? "the refresh failed" : "the refresh did not end in time");
  }

  private startRefresh(now: number, startedAt: number): Refresh {
    const refresh: Refresh = { startedAt, settled: false, failed: false, promise: this.refresh(now) };
    refresh.promise = refresh.promise.then(
      (index) => {
        refresh.settled = true;
        return index;
      },
      (error: unknown) => {
        refresh.settled = true;
        refresh.failed = true;
        throw error;
      },
    );
    void refresh.promise
      .catch(() => undefined)
      .then(() => {
        if (this.refreshing === refresh) this.refreshing = undefined;
      });
    this.refreshing = refresh;
    return refresh;
  }

  /** The registry cannot be asked: the copy held answers (a listing may be late, nothing else is wrong); without one there is no market to answer for. */
  private unanswered(held: { index: RegistryIndex } | undefined, why: string): RegistryIndex {
    if (held) {
      logFailure("registry refresh failed; serving the copy held", { error: why });
      return held.index;
    }
    throw problem("UNAVAILABLE", "the market registry did not answer; try again shortly", {}, { "Retry-After": "1" });
  }

  /** Asks whether the copy is current as of `now` (the moment the refresh began). */
  private async refresh(now: number): Promise<RegistryIndex> {
    const answer = await this.ask(this.held?.epoch ?? "", this.held?.index.snapshot.version ?? -1);
    if (answer) this.adopt(answer);
    this.checkedAt = now;
    return this.held!.index;
  }

  /** Takes a publication (a refresh's, or the one the operator API just made) unless it is older. */
  adopt(answer: RegistryText): RegistryIndex {
    const held = this.held;
    if (!held || held.epoch !== answer.epoch || answer.version > held.index.snapshot.version) {
      this.held = { epoch: answer.epoch, index: new RegistryIndex(JSON.parse(answer.text) as RegistrySnapshot) };
    }
    return this.held!.index;
  }
}

let source: Env | undefined;
const isolateCopy = new RegistryCopy((epoch, version) => registryObject(source!).since(epoch, version));

/**
 * This isolate's registry copy, current within `REGISTRY_REFRESH_MS`: every entry point that looks
 * a market up (the Worker's middleware, a Durable Object's method) awaits it first.
 *
 * @example
 * const registry = await ensureRegistry(env, (p) => ctx.waitUntil(p));
 * registry.bySymbol.get("BTCUSDT");
 */
export function ensureRegistry(env: Env, waitUntil?: (promise: Promise<unknown>) => void): Promise<RegistryIndex> {
  source = env;
  return isolateCopy.ensure(Date.now(), msSetting(env.REGISTRY_REFRESH_MS, DEFAULT_REGISTRY_REFRESH_MS), waitUntil);
}

/** Installs what the operator API just published, so the isolate that made a change reads it at once. */
export function adoptRegistry(answer: RegistryText): RegistryIndex {
  return isolateCopy.adopt(answer);
}

/** The copy as ensured last (the lookups below are synchronous; `ensureRegistry` ran before them). */
export function currentRegistry(): RegistryIndex {
  const index = isolateCopy.index;
  if (!index) throw new Error("the registry copy is used before ensureRegistry(env)");
  return index;
}

export function findMarket(symbol: string): MarketConfig | undefined {
  return currentRegistry().bySymbol.get(symbol);
}

export function quoteAssets(): readonly string[] {
  return currentRegistry().quotes;
}
