import { registryObject } from "../core/object-ids";
import { problem } from "../core/problem";
import { msSetting } from "../core/settings";
import { type MarketConfig, RegistryIndex, type RegistrySnapshot } from "./model";
import type { RegistryText } from "./registry-object";

/** How often an isolate asks whether its registry copy is current (production; `npm start` sets 1 s). */
export const DEFAULT_REGISTRY_REFRESH_MS = 10_000;
/** Past this many refresh intervals without an answer, a request waits for the registry instead of serving the copy. */
const SERVE_STALE_INTERVALS = 6;

/**
 * An isolate's copy of the registry (docs/operations.md#listing-markets), with the clock and the
 * source passed in. A request finds the copy current, or starts one background refresh and is
 * served the copy it has; only an isolate with no copy (or one far past its interval) waits.
 */
export class RegistryCopy {
  private held: { epoch: string; index: RegistryIndex } | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<RegistryIndex> | undefined;

  constructor(private readonly ask: (epoch: string, version: number) => Promise<RegistryText | null>) {}

  get index(): RegistryIndex | undefined {
    return this.held?.index;
  }

  /** The copy, current within `intervalMs` of `now` as far as this isolate can tell. */
  async ensure(now: number, intervalMs: number, waitUntil?: (promise: Promise<unknown>) => void): Promise<RegistryIndex> {
    const held = this.held;
    if (held && now - this.checkedAt < intervalMs) return held.index;
    this.refreshing ??= this.refresh(now).finally(() => {
      this.refreshing = undefined;
    });
    if (held && intervalMs > 0 && now - this.checkedAt < SERVE_STALE_INTERVALS * intervalMs) {
      const background = this.refreshing.catch((error: unknown) => console.error("registry refresh failed", String(error)));
      waitUntil?.(background);
      return held.index;
    }
    try {
      return await this.refreshing;
    } catch (error) {
      // The registry cannot be asked: the copy held answers (a listing may be late, nothing else
      // is wrong); without one there is no market to answer for.
      if (held) {
        console.error("registry refresh failed; serving the copy held", String(error));
        return held.index;
      }
      throw problem("UNAVAILABLE", "the market registry did not answer; try again shortly", {}, { "Retry-After": "1" });
    }
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
