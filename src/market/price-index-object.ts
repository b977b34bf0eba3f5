import { type Checked, createAnnouncement, nextChange, patchAnnouncement, systemStatus, visible } from "../announcements/model";
import type { Announcement, AnnouncementInput, AnnouncementPatch } from "../announcements/schemas";
import { alarmBy } from "../core/alarms";
import { streamHub } from "../core/object-ids";
import { type ProblemResult, problem, toProblemResult } from "../core/problem";
import { msSetting } from "../core/settings";
import type { MarketAnswer } from "../domain/market-answer";
import { groupOf, type RegistryIndex } from "../domain/market-config";
import type { MarketSummary } from "../groups/messages";
import { type VenueAnswerKind, VenueBoard } from "../groups/venue-board";
import { logFailure } from "../logs/log";
import { billed } from "../metrics/billed-bindings";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { ensureRegistry } from "../registry/copy";
import { ObjectSession } from "../rpc-sessions/object-session";
import { everyShard } from "../streams/every-shard";
import { STATUS_STREAM, type StreamEvent, TICKERS_STREAM, type TickerWindow } from "../streams/protocol";
import { type PriceSnapshot, pricesIn } from "./price-index";

export const PRICE_SNAPSHOT_KEY = "prices/snapshot";
/** A trading market with no update for this long is reported stale (`FEED_STALE_AFTER_MS`). */
const DEFAULT_FEED_STALE_AFTER_MS = 60_000;
/** Workers KV accepts one write per second per key; the `prices.*` and `tickers` streams go out with it. */
const KV_WRITE_EVERY_MS = 1_000;
/** Summaries are stored per group, each group at most once per this (rows written cost money). */
const SUMMARIES_PREFIX = "summaries:";
const PERSIST_EVERY_MS = 10_000;
const SHARDS_KEY = "shards";
/** The operator's announcements (docs/operations.md#announcements), and the next moment one starts or ends. */
const ANNOUNCEMENTS_KEY = "announcements";
const STATUS_CHANGE_KEY = "statusChangeAt";

/** A refused announcement change as the problem the operator gets. */
function refusal(refused: Extract<Checked<unknown>, { ok: false }>): ProblemResult {
  const errors = refused.path ? { errors: [{ path: refused.path, message: refused.message }] } : undefined;
  return toProblemResult(problem(refused.code, refused.message, errors));
}

/**
 * The venue's aggregated view (docs/design.md#group-relays): the group relays send it their
 * markets' summaries, at most once per 100 ms each, so its calls grow with groups, not markets.
 * From them it holds the all-market answers as ready text (`answer`), writes the price snapshot to
 * KV at most once a second, and sends `prices.{QUOTE}` and `tickers` to the shards that want them.
 * Summaries are stored per group at most every 10 s (32 rows at 2,000 markets, not a row per
 * report), so an evicted index comes back with every market's word of at most 10 s before; markets
 * report again with their next change.
 */
export class PriceIndex extends MeteredObject {
  private readonly board: VenueBoard;
  private lastWriteAt = 0;
  /** Markets whose summary changed since the last persist, and when that was. */
  private readonly dirty = new Set<string>();
  private persistedAt = 0;
  /** Per stream (`prices.USDT`, `tickers`), the shards subscribed to it. */
  private readonly subscribers: Map<string, Set<string>>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "price-index");
    this.board = new VenueBoard(
      [...ctx.storage.kv.list<Record<string, MarketSummary>>({ prefix: SUMMARIES_PREFIX })].flatMap(([, group]) => Object.values(group)),
    );
    const shards = this.ctx.storage.kv.get<Record<string, string[]>>(SHARDS_KEY) ?? {};
    this.subscribers = new Map(Object.entries(shards).map(([stream, list]) => [stream, new Set(list)]));
  }

  private persistShards(): void {
    this.ctx.storage.kv.put(SHARDS_KEY, Object.fromEntries([...this.subscribers].map(([stream, shards]) => [stream, [...shards]])));
  }

  /** A shard wants `stream` (`prices.{QUOTE}` or `tickers`) from now on. */
  subscribeShard(stream: string, shard: string): void {
    const shards = this.subscribers.get(stream) ?? new Set();
    if (shards.has(shard)) return;
    shards.add(shard);
    this.subscribers.set(stream, shards);
    this.persistShards();
  }

  unsubscribeShard(stream: string, shard: string): void {
    if (this.subscribers.get(stream)?.delete(shard)) this.persistShards();
  }

  /** A group relay's session (`../rpc-sessions/`): its summaries every tick ride on it, one billed request. */
  openSession(): ObjectSession<PriceIndex> {
    return new ObjectSession<PriceIndex>(this, ["reportSummaries"]);
  }

  /** A group relay's batch of its markets' summaries. */
  async reportSummaries(summaries: MarketSummary[]): Promise<void> {
    for (const summary of this.board.apply(summaries)) this.dirty.add(summary.symbol);
    const now = Date.now();
    if (now - this.lastWriteAt >= KV_WRITE_EVERY_MS) {
      await this.publish(now);
      return;
    }
    // The next write is due within a second: an alarm set later (the summaries' write, up to
    // PERSIST_EVERY_MS away) is brought forward, or the streams and KV would wait for it.
    await alarmBy(this.ctx.storage, this.lastWriteAt + KV_WRITE_EVERY_MS);
  }

  /**
   * The venue's status (`GET /api/status`, the `status` stream): the system status, the current and
   * upcoming announcements and the feeds' health, built per refresh of a copy, not per request.
   */
  async status(): Promise<MarketAnswer> {
    const registry = await ensureRegistry(this.env);
    const now = Date.now();
    const feeds = this.board.status(registry, now, msSetting(this.env.FEED_STALE_AFTER_MS, DEFAULT_FEED_STALE_AFTER_MS));
    const announcements = this.announcements();
    const status = { ...feeds, status: systemStatus(announcements, feeds.stale, now), announcements: visible(announcements, now) };
    return { text: JSON.stringify(status), at: now, version: this.board.version };
  }

  announcements(): Announcement[] {
    return this.ctx.storage.kv.get<Announcement[]>(ANNOUNCEMENTS_KEY) ?? [];
  }

  /** A new announcement; every shard is told before the answer (`status` subscribers, and the dialects' maintenance notices). */
  async announce(input: AnnouncementInput): Promise<Announcement | ProblemResult> {
    const held = this.announcements();
    const id = `ann_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const made = createAnnouncement(held, input, id, Date.now());
    if (!made.ok) return refusal(made);
    await this.keep([...held, made.value]);
    return made.value;
  }

  async changeAnnouncement(id: string, patch: AnnouncementPatch): Promise<Announcement | ProblemResult> {
    const held = this.announcements();
    const found = held.find((a) => a.id === id);
    if (!found) return toProblemResult(problem("NOT_FOUND", `no announcement ${id}`));
    const changed = patchAnnouncement(found, patch, Date.now());
    if (!changed.ok) return refusal(changed);
    await this.keep(held.map((a) => (a.id === id ? changed.value : a)));
    return changed.value;
  }

  async removeAnnouncement(id: string): Promise<boolean> {
    const held = this.announcements();
    if (!held.some((a) => a.id === id)) return false;
    await this.keep(held.filter((a) => a.id !== id));
    return true;
  }

  /** Stores the announcements and tells every shard; the alarm tells them again when one starts or ends. */
  private async keep(announcements: Announcement[]): Promise<void> {
    this.ctx.storage.kv.put(ANNOUNCEMENTS_KEY, announcements);
    await this.pushStatus(Date.now());
  }

  /**
   * Sends the status to every shard (all of them: each may hold `status` subscribers or a
   * dialect's connections that are told of a maintenance), and arms the alarm for the next change.
   */
  private async pushStatus(now: number): Promise<void> {
    const announcements = this.announcements();
    const next = nextChange(announcements, now);
    if (next === undefined) this.ctx.storage.kv.delete(STATUS_CHANGE_KEY);
    else {
      this.ctx.storage.kv.put(STATUS_CHANGE_KEY, next);
      await alarmBy(this.ctx.storage, next);
    }
    const event: StreamEvent = { stream: STATUS_STREAM, data: JSON.parse((await this.status()).text) };
    await Promise.all(
      (await everyShard(this.env)).map((shard) =>
        streamHub(this.env, shard)
          .publish([event], "index")
          .catch((error: unknown) => logFailure("status to a shard failed", { shard, error })),
      ),
    );
  }

  /** An all-market answer for the edge copies: the same text until a summary changes it. */
  async answer(kind: VenueAnswerKind): Promise<MarketAnswer> {
    const registry = await ensureRegistry(this.env);
    const now = Date.now();
    return { text: this.board.text(kind, registry, now), at: Math.max(this.board.updatedAt, this.lastWriteAt) || now, version: this.board.version };
  }

  /** Writes the groups whose summaries changed, one row each, at most every PERSIST_EVERY_MS. */
  private persist(now: number, registry: RegistryIndex): void {
    if (this.dirty.size === 0 || now - this.persistedAt < PERSIST_EVERY_MS) return;
    this.persistedAt = now;
    const groups = new Set([...this.dirty].map((symbol) => registry.bySymbol.get(symbol)).flatMap((m) => (m ? [groupOf(m)] : [])));
    this.dirty.clear();
    for (const group of groups) {
      const record: Record<string, MarketSummary> = {};
      for (const market of registry.snapshot.markets) {
        const summary = groupOf(market) === group ? this.board.summary(market.symbol) : undefined;
        // The windows come again with the market's next summary: a row stays a few hundred bytes a market.
        if (summary) {
          const { windows: _windows, ...kept } = summary;
          record[market.symbol] = kept;
        }
      }
      this.ctx.storage.kv.put(SUMMARIES_PREFIX + group, record);
    }
  }

  /** The KV snapshot and the streams, and the summaries' write when it is due. */
  private async publish(now: number): Promise<void> {
    this.lastWriteAt = now;
    const registry = await ensureRegistry(this.env);
    this.persist(now, registry);
    // What is not yet due to be written gets its own alarm, so a market that went quiet is stored too.
    if (this.dirty.size > 0) await alarmBy(this.ctx.storage, this.persistedAt + PERSIST_EVERY_MS);
    const markets: PriceSnapshot["markets"] = {};
    for (const market of registry.snapshot.markets) {
      const price = this.board.summary(market.symbol)?.price;
      if (price) markets[market.symbol] = { ...price, status: market.status };
    }
    const snapshot: PriceSnapshot = { asOf: now, markets };
    await billed(this.env, "PRICES").put(PRICE_SNAPSHOT_KEY, JSON.stringify(snapshot));
    // One call per shard, with every stream it wants.
    const perShard = new Map<string, StreamEvent[]>();
    const changed = this.board.takeChanged(registry);
    for (const [stream, shards] of this.subscribers) {
      let event: StreamEvent | undefined;
      if (stream === TICKERS_STREAM || stream.startsWith(`${TICKERS_STREAM}.`)) {
        const window = stream.slice(TICKERS_STREAM.length + 1) as TickerWindow;
        const records = this.board.recordsOf(changed, window || undefined);
        if (records) event = { stream, data: JSON.parse(records) };
      } else {
        const quote = stream.slice("prices.".length);
        event = { stream, data: { quote, asOf: now, data: pricesIn(registry, snapshot, quote) } };
      }
      if (!event) continue;
      for (const shard of shards) perShard.set(shard, [...(perShard.get(shard) ?? []), event]);
    }
    await Promise.all(
      [...perShard].map(([shard, events]) =>
        streamHub(this.env, shard)
          .publish(events, "index")
          .catch((error: unknown) => logFailure("publish to a shard failed", { shard, error })),
      ),
    );
  }

  override async alarm(): Promise<void> {
    // Set for the next KV write, the summaries' write or an announcement's start or end, whichever came first.
    const now = Date.now();
    const change = this.ctx.storage.kv.get<number>(STATUS_CHANGE_KEY);
    if (change !== undefined && change <= now) await this.pushStatus(now);
    else if (change !== undefined) await this.ctx.storage.setAlarm(change);
    await this.publish(now);
  }
}

meterRequests(PriceIndex, [
  "subscribeShard",
  "unsubscribeShard",
  "reportSummaries",
  "openSession",
  "status",
  "announcements",
  "announce",
  "changeAnnouncement",
  "removeAnnouncement",
  "answer",
  "alarm",
]);
