import { logFailure } from "../logs/log";
import { type HeldCounts, PendingUsage, splitHeld } from "./usage-ledger";

/** How long a gate holds its keys' counts before it hands them to their ledgers. */
const USAGE_HAND_OVER_MS = 5_000;

/**
 * The usage a gate counts for its account keys (docs/limits.md#key-gates), held in memory and handed
 * to the keys' ledgers every `everyMs`: one call a ledger for all its keys, where each signed request
 * was a call of its own. Hand-overs run one after another; one that fails is held again for the
 * next. A usage read asks for a hand-over first ({@link handOver}), so it sees every request
 * answered before it. What is held when the object leaves memory is lost (at most `everyMs` of
 * counts; a busy gate leaves only at a deploy).
 *
 * @example
 * const usage = new HeldUsage((ledger, held) => keyUsageLedgerAt(env, ledger).add(held), usageLedgerOf);
 * usage.count("mk_0123456789abcdef01234567", Date.now(), false);
 */
export class HeldUsage {
  private readonly pending = new PendingUsage();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private handing: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (ledger: number, held: HeldCounts) => Promise<void>,
    private readonly ledgerOf: (keyId: string) => number,
    private readonly everyMs = USAGE_HAND_OVER_MS,
  ) {}

  /** Counts one signed request of `keyId` at `at` (a refused one is a 429 too). */
  count(keyId: string, at: number, refused: boolean): void {
    this.pending.count(keyId, at, refused);
    this.arm();
  }

  private arm(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.handOver().catch((error: unknown) => logFailure("gate: usage not handed over, held for the next", { error }));
    }, this.everyMs);
  }

  /** Hands everything held to the ledgers; resolves once they have it (rejects, holding it again, if one did not take it). */
  handOver(): Promise<void> {
    const run = this.handing.then(async () => {
      if (this.pending.empty) return;
      const parts = splitHeld(this.pending.take(), this.ledgerOf);
      const sent = await Promise.allSettled([...parts].map(([ledger, held]) => this.send(ledger, held)));
      const failed = [...parts.values()].filter((_, i) => sent[i]?.status === "rejected");
      if (failed.length === 0) return;
      for (const held of failed) this.pending.restore(held);
      this.arm();
      throw new Error(`${failed.length} of ${parts.size} ledgers did not take the usage handed over`);
    });
    this.handing = run.catch(() => undefined);
    return run;
  }
}
