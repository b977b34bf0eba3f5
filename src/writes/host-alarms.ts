import { doublingMs } from "../core/backoff";

/** The one stored record of when each hosted market's alarm is due. */
const DUE_KEY = "alarms";
/** A market whose alarm failed runs again after 1 s, twice as long after each failure in a row, at most 5 minutes. */
const FIRST_RETRY_MS = 1_000;
const LONGEST_RETRY_MS = 300_000;

/**
 * The alarms of the markets one object hosts (docs/design.md#market-hosts), on the object's one
 * alarm: each market sets and reads its own as if it were alone, the host keeps them in one
 * record (a row when one changes) and arms its alarm for the earliest. When it fires, the markets
 * due are taken off and run; they set their next, and the alarm is armed again.
 *
 * A market sets its alarm only when its time changes (about once a minute while it trades); the
 * markets due together run in one round of the object's alarm, which writes the record and arms
 * the alarm once at its end (`running`): where each market's alarm was a row and a request of its
 * own, a group's markets due together are one request and two rows.
 */
export class HostAlarms {
  private readonly due: Map<string, number>;
  /** The object's alarm as this host last set or read it: null for none, undefined until asked. */
  private armedAt: number | null | undefined;
  /** The armings asked for, one after another (each reads and may set the object's alarm). */
  private arming: Promise<void> = Promise.resolve();
  /** Per market, its alarm's failures in a row (in memory: a restart tries it at once). */
  private readonly failures = new Map<string, number>();
  /** Inside `running`: the record is written and the alarm armed once, at its end. */
  private deferred = false;
  private dirty = false;

  constructor(private readonly storage: DurableObjectStorage) {
    this.due = new Map(Object.entries(storage.kv.get<Record<string, number>>(DUE_KEY) ?? {}));
  }

  /** One market's alarm, as its parts use an object's. */
  of(symbol: string): { getAlarm(): Promise<number | null>; setAlarm(time: number): Promise<void> } {
    return {
      getAlarm: async () => this.due.get(symbol) ?? null,
      setAlarm: async (time) => {
        if (this.due.get(symbol) === time) return;
        this.due.set(symbol, time);
        if (this.changed()) await this.rearm();
      },
    };
  }

  /**
   * The alarm fired at `now`: the markets due, taken off (each sets its next as it runs) — by now,
   * or else the earliest (an alarm run before its time, as a test does, serves the one it was set for).
   */
  take(now: number): string[] {
    this.armedAt = null;
    if (this.due.size === 0) return [];
    const by = Math.max(now, Math.min(...this.due.values()));
    const due = [...this.due].filter(([, time]) => time <= by).map(([symbol]) => symbol);
    if (due.length === 0) return due;
    for (const symbol of due) this.due.delete(symbol);
    this.changed();
    return due;
  }

  /**
   * A market's alarm failed: it is due again after its own back-off (1 s, doubling, at most 5
   * minutes), or sooner if it set an earlier time before it failed. Returns when. The object's
   * alarm does not throw for it: the runtime's retries are the object's, and spent on one market
   * they would stop every market's alarms.
   */
  failed(symbol: string, now: number): number {
    const failures = (this.failures.get(symbol) ?? 0) + 1;
    this.failures.set(symbol, failures);
    const retryAt = Math.min(this.due.get(symbol) ?? Number.POSITIVE_INFINITY, now + doublingMs(failures, FIRST_RETRY_MS, LONGEST_RETRY_MS));
    if (this.due.get(symbol) !== retryAt) {
      this.due.set(symbol, retryAt);
      this.changed();
    }
    return retryAt;
  }

  /** A market's alarm ran: its back-off starts again. */
  succeeded(symbol: string): void {
    if (this.failures.size > 0) this.failures.delete(symbol);
  }

  /**
   * Runs the object's alarm: the markets taken off and each setting its next write the record
   * once and arm the alarm once, at the end — a row, not one a market. Should the object fail
   * before the end, the stored record still holds the markets as due, and the runtime's retry of
   * the alarm runs them again.
   */
  async running(run: () => Promise<void>): Promise<void> {
    this.deferred = true;
    try {
      await run();
    } finally {
      this.deferred = false;
      if (this.dirty) this.persist();
    }
    await this.rearm();
  }

  /** Arms the object's alarm for the earliest market's, after any arming already asked for. */
  rearm(): Promise<void> {
    this.arming = this.arming.catch(() => undefined).then(() => this.arm());
    return this.arming;
  }

  /** Resolves once every arming asked for so far is done (a test counts the rows after it). */
  settled(): Promise<void> {
    return this.arming.catch(() => undefined);
  }

  private async arm(): Promise<void> {
    if (this.armedAt === undefined) {
      const stored = await this.storage.getAlarm();
      this.armedAt ??= stored;
    }
    if (this.due.size === 0) return;
    const next = Math.min(...this.due.values());
    if (this.armedAt !== null && this.armedAt <= next) return;
    // Known once it is set: a failed setAlarm leaves the next arming to ask again.
    this.armedAt = undefined;
    await this.storage.setAlarm(next);
    this.armedAt = next;
  }

  /** The record changed: written now, or at the end of `running`. Says whether it was written now. */
  private changed(): boolean {
    if (this.deferred) {
      this.dirty = true;
      return false;
    }
    this.persist();
    return true;
  }

  private persist(): void {
    this.dirty = false;
    this.storage.kv.put(DUE_KEY, Object.fromEntries(this.due));
  }
}
