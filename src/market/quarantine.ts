import { doublingMs } from "../core/backoff";
import { type ProblemError, problem } from "../core/problem";
import { logFailure } from "../logs/log";

/** A held market is tried again after 1 s, then twice as long after each failure, at most a minute. */
const FIRST_HOLD_MS = 1_000;
const LONGEST_HOLD_MS = 60_000;
/** A failure's text as the operator sees it, cut to this many characters. */
const REASON_CHARS = 200;

/** What the operator sees of a held market (`/status`, `/admin/metrics`). */
export interface HeldMarket {
  symbol: string;
  /** When it first failed, in this run of its host. */
  since: number;
  /** Until when its batches are refused without being tried. */
  until: number;
  /** Failures in a row. */
  failures: number;
  reason: string;
}

/**
 * The markets of a group that failed to load, stage or commit (docs/design.md#isolation): each is
 * held alone — its batches are answered 503 `MARKET_UNAVAILABLE` at once, with a `Retry-After`,
 * while the group's other markets go on committing — and tried again after a back-off (1 s,
 * doubling, at most a minute). A market that commits again is released. In memory: a restart of
 * the host tries every market afresh, and a market that still fails is held again at its first use.
 *
 * @example
 * const held = quarantine.refusal("BTCUSDT"); // a ProblemError while held
 * quarantine.failed("BTCUSDT", error);        // after its load or commit threw
 * quarantine.released("BTCUSDT");             // after it committed
 */
export class Quarantine {
  private readonly held = new Map<string, HeldMarket>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The answer for a batch of a held market, or undefined when it may be tried. */
  refusal(symbol: string): ProblemError | undefined {
    const entry = this.held.get(symbol);
    if (!entry || entry.until <= this.now()) return undefined;
    return this.problemOf(entry);
  }

  /** The market failed: held for the back-off, which doubles with each failure in a row. Returns the answer for its batches. */
  failed(symbol: string, error: unknown): ProblemError {
    const now = this.now();
    const before = this.held.get(symbol);
    const failures = (before?.failures ?? 0) + 1;
    const entry: HeldMarket = {
      symbol,
      since: before?.since ?? now,
      until: now + doublingMs(failures, FIRST_HOLD_MS, LONGEST_HOLD_MS),
      failures,
      reason: String(error instanceof Error ? error.message : error).slice(0, REASON_CHARS),
    };
    this.held.set(symbol, entry);
    logFailure("market quarantined", { symbol, failures, reason: entry.reason });
    return this.problemOf(entry);
  }

  /** The market committed: no longer held. */
  released(symbol: string): void {
    if (this.held.size > 0) this.held.delete(symbol);
  }

  /** The markets held, or failed and not yet committed since. */
  list(): HeldMarket[] {
    return [...this.held.values()];
  }

  private problemOf(entry: HeldMarket): ProblemError {
    const retryAfterMs = Math.max(1_000, entry.until - this.now());
    return problem(
      "MARKET_UNAVAILABLE",
      `${entry.symbol} failed to load or commit and is held for ${Math.ceil(retryAfterMs / 1_000)} s; nothing of this batch was applied: resend it then (the group's other markets are unaffected)`,
      { retryAfterMs },
    );
  }
}
