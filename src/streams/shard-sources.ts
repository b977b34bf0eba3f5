import { marketObject, priceIndex } from "../core/object-ids";
import { logFailure } from "../logs/log";
import { findMarket } from "../registry/copy";
import { HEARTBEAT_STREAM, marketStreams, parseStreamName, STATUS_STREAM, type StreamName } from "./protocol";
import { ResumeLog } from "./resume-log";
import { type BookMessage, WireBook } from "./wire-book";

/** The book snapshot a subscriber gets first (docs/streams.md). */
export const SNAPSHOT_DEPTH = 100;
/** A resume waits this long at most for a market's base book after the shard registers (a restart). */
const RESUME_BASE_WAIT_MS = 2_000;
/** A market's base book that has not come this long after registering is asked for again (a lost join heals). */
const BASE_TIMEOUT_MS = 5_000;

/** The streams the price index publishes (every other stream but the heartbeat is a market's). */
function fromPriceIndex(stream: StreamName): boolean {
  return stream.kind === "prices" || stream.kind === "tickers";
}

/** Markets and the price index publish to shards; this names what a shard registered for. */
function sourceOf(stream: StreamName): string {
  if (stream.kind === "heartbeat") return HEARTBEAT_STREAM;
  if (stream.kind === "status") return STATUS_STREAM;
  return fromPriceIndex(stream) ? `index:${stream.name}` : `market:${stream.subject}`;
}

/** What the sources need of their shard. */
export interface SourceHost {
  readonly env: Env;
  shard(): Promise<string>;
  armAlarm(at: number): Promise<void>;
  armHeartbeat(): Promise<void>;
  /** Whether a stream has a subscriber here, native or a dialect's. */
  wants(name: string): boolean;
}

/**
 * What publishes to a shard and what the shard keeps of it (docs/streams.md#placement): the
 * registrations with markets and the price index (made when a stream here is first wanted,
 * released when none is), each market's book copy that every snapshot a client gets comes from,
 * the last book messages for resumes, and the base books on their way.
 */
export class ShardSources {
  /** Per market, the shard's copy of its book (the snapshots' source, and the deltas' check). */
  readonly books = new Map<string, WireBook>();
  /** Markets whose base book is on its way, since when. */
  readonly awaitingBase = new Map<string, number>();
  readonly registrations = new Map<string, Promise<void>>();
  private readonly releases = new Map<string, Promise<void>>();
  /** Subscribes waiting for their source's registration, per source: they keep it wanted. */
  private readonly joining = new Map<string, number>();
  /** Per market, its last book messages as sent, for resumes (docs/streams.md#resuming). */
  readonly recent = new ResumeLog();
  /** Resumes waiting for a market's base book, per market. */
  private readonly baseWaiters = new Map<string, Set<() => void>>();

  constructor(private readonly host: SourceHost) {}

  /**
   * Resolves once the shard has a copy of the market's book, or after `RESUME_BASE_WAIT_MS`; a
   * waiter that timed out leaves the list, so a base that never comes holds nothing.
   */
  baseOf(symbol: string): Promise<void> {
    if (this.books.has(symbol) || !this.awaitingBase.has(symbol)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.baseWaiters.get(symbol) ?? new Set<() => void>();
      this.baseWaiters.set(symbol, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.baseWaiters.get(symbol) === waiters) this.baseWaiters.delete(symbol);
        resolve();
      };
      const timer = setTimeout(done, RESUME_BASE_WAIT_MS);
      waiters.add(done);
    });
  }

  /**
   * Makes the sources of the streams being subscribed publish to this shard, keeping them wanted
   * meanwhile, and waits for the base books of `waitForBase` (a resume needs the shard's copy;
   * after a restart its base is on its way). Rejects when a source could not be registered.
   */
  async join(streams: StreamName[], waitForBase: readonly string[] = []): Promise<void> {
    const sources = [...new Map(streams.map((s) => [sourceOf(s), s])).values()];
    const count = (by: number) => {
      for (const s of sources) {
        const n = (this.joining.get(sourceOf(s)) ?? 0) + by;
        if (n > 0) this.joining.set(sourceOf(s), n);
        else this.joining.delete(sourceOf(s));
      }
    };
    count(1);
    try {
      await Promise.all(sources.map((s) => this.register(s)));
      await Promise.all(waitForBase.map((symbol) => this.baseOf(symbol)));
    } finally {
      count(-1);
    }
  }

  /** Makes sure the source publishes to this shard (after any release of it has finished). */
  register(stream: StreamName): Promise<void> {
    const source = sourceOf(stream);
    let registration = this.registrations.get(source);
    if (!registration) {
      if (!fromPriceIndex(stream) && stream.kind !== "heartbeat") {
        // A new registration brings a new base book; until then there is no copy to trust. If it
        // never comes (the join was lost on its way), the alarm asks again.
        this.books.delete(stream.subject);
        this.awaitingBase.set(stream.subject, Date.now());
        this.host.armAlarm(Date.now() + BASE_TIMEOUT_MS).catch((error: unknown) => logFailure("arming the base re-ask failed", { error }));
      }
      const released = this.releases.get(source) ?? Promise.resolve();
      registration = released.then(() => this.registerSource(stream));
      registration.catch(() => {
        if (this.registrations.get(source) === registration) this.registrations.delete(source);
      });
      this.registrations.set(source, registration);
    }
    return registration;
  }

  async registerSource(stream: StreamName): Promise<void> {
    if (stream.kind === "heartbeat") return this.host.armHeartbeat();
    if (stream.kind === "status") return; // every shard hears the status; nothing to join
    const shard = await this.host.shard();
    if (fromPriceIndex(stream)) return priceIndex(this.host.env).subscribeShard(stream.name, shard);
    // The market answers by sending its whole book down the channel of the deltas that follow.
    try {
      const market = findMarket(stream.subject);
      if (!market) throw new Error(`${stream.subject} is no longer listed`);
      await marketObject(this.host.env, market).subscribeShard(market, shard);
    } catch (error) {
      this.awaitingBase.delete(stream.subject);
      throw error;
    }
  }

  /** True while any stream of the source (a market's streams, a quote's prices, the heartbeat) has a subscriber here. */
  sourceWanted(stream: StreamName): boolean {
    const held = this.host.wants;
    // The event's own stream first: on the hot path it is wanted, and a market's ~30 names need not be made.
    if (held(stream.name) || (this.joining.get(sourceOf(stream)) ?? 0) > 0) return true;
    return !fromPriceIndex(stream) && stream.kind !== "heartbeat" && marketStreams(stream.subject).some(held);
  }

  /** Nobody here wants a source any more: stop its publishing to this shard. */
  release(stream: StreamName): void {
    if (stream.kind === "heartbeat" || stream.kind === "status") return; // nothing registered: the alarm stops by itself, the status comes anyway
    const source = sourceOf(stream);
    if (this.releases.has(source)) return;
    this.registrations.delete(source);
    if (!fromPriceIndex(stream)) {
      this.books.delete(stream.subject);
      this.recent.forgetMarket(stream.subject);
      this.awaitingBase.delete(stream.subject);
    }
    const released = (async () => {
      const shard = await this.host.shard();
      if (fromPriceIndex(stream)) return priceIndex(this.host.env).unsubscribeShard(stream.name, shard);
      // A market delisted meanwhile has nobody to tell.
      const market = findMarket(stream.subject);
      if (market) await marketObject(this.host.env, market).unsubscribeShard(market, shard);
    })()
      .catch((error: unknown) => logFailure("release failed", { error }))
      .finally(() => this.releases.delete(source));
    this.releases.set(source, released);
  }

  /**
   * Keeps the shard's copy of a book and says what its subscribers get: a delta as it came; a
   * snapshot that continues the copy (a publisher's, in a conflated interval) as the delta from
   * the copy to it — every level that changed or that an update in between touched, so it
   * brings any book from `firstSequence − 1` to `sequence` exactly; any other snapshot (a base)
   * as the copy's 100 best levels; nothing while the copy is missing.
   */
  trackBook(stream: StreamName, message: BookMessage): BookMessage | undefined {
    const symbol = stream.subject;
    if (message.type === "snapshot") {
      const before = this.books.get(symbol);
      const book = new WireBook();
      book.apply(message);
      this.books.set(symbol, book);
      this.awaitingBase.delete(symbol);
      for (const wake of [...(this.baseWaiters.get(symbol) ?? [])]) wake();
      if (before && message.firstSequence === before.sequence + 1) {
        const changes = book.changesSince(before, message.touched);
        return { type: "delta", firstSequence: message.firstSequence, sequence: book.sequence, time: message.time, checksum: message.checksum, ...changes };
      }
      return book.snapshot(SNAPSHOT_DEPTH);
    }
    const book = this.books.get(symbol);
    if (book?.apply(message)) return message;
    // No copy (woken from hibernation), or a delta that does not follow it: ask for a new base,
    // unless one is on its way. Its snapshot goes to every book subscriber.
    this.books.delete(symbol);
    const since = this.awaitingBase.get(symbol);
    if (since === undefined || Date.now() - since > BASE_TIMEOUT_MS) {
      this.registrations.delete(sourceOf(stream));
      this.register(stream).catch((error: unknown) => logFailure("book resync failed", { symbol, error }));
    }
    return undefined;
  }

  /** The alarm's duty: asks again for a base that has not come in `BASE_TIMEOUT_MS`; returns when each next check is due. */
  reaskBases(now: number): number[] {
    const due: number[] = [];
    for (const [symbol, since] of this.awaitingBase) {
      if (now - since < BASE_TIMEOUT_MS) {
        due.push(since + BASE_TIMEOUT_MS);
        continue;
      }
      const stream = parseStreamName(`book.${symbol}`);
      if (!stream || !this.sourceWanted(stream)) {
        this.awaitingBase.delete(symbol);
        continue;
      }
      this.registrations.delete(sourceOf(stream));
      this.register(stream).catch((error: unknown) => logFailure("base re-ask failed", { symbol, error }));
      due.push(now + BASE_TIMEOUT_MS);
    }
    return due;
  }

  /** A market was delisted: nothing of it is kept here, and it is not registered any more. */
  forgetMarket(symbol: string): void {
    this.books.delete(symbol);
    this.recent.forgetMarket(symbol);
    this.awaitingBase.delete(symbol);
    this.registrations.delete(`market:${symbol}`);
  }
}
