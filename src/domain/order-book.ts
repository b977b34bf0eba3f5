import { formatUnits } from "../core/decimal";
import { ProblemError, problem } from "../core/problem";
import { CHECKSUM_DEPTH, crc32 } from "./book-checksum";
import { batchFingerprint, bookFingerprint } from "./book-fingerprint";

/** A price level in integer units at the market's scales: `[price, quantity]`. */
export type UnitLevel = readonly [price: bigint, quantity: bigint];

/** The best level of each side of a book, in units; absent for an empty side. */
export interface TopOfBook {
  bid?: UnitLevel;
  ask?: UnitLevel;
}
/** A price level as sent on the wire: `["97000.10", "0.50000"]`. */
export type WireLevel = [price: string, quantity: string];

type BookSide = "bids" | "asks";

export interface BookUpdate {
  type: "snapshot" | "delta";
  sequence: number;
  bids: readonly UnitLevel[];
  asks: readonly UnitLevel[];
}

/** Bounds memory and snapshot cost; a real venue's L2 feed rarely exceeds a few thousand. */
export const MAX_LEVELS_PER_SIDE = 5000;

/**
 * How far one snapshot may move the sequence forward. Sequences stop at 2^53 − 1 (exact in
 * JSON); bounding each step keeps that ceiling ~2^29 updates away from any state a request can
 * reach, so no single request can leave a market with no next sequence.
 */
export const MAX_SNAPSHOT_STEP = 2 ** 24;

/** What an update did: applied, or an identical replay of the last applied one (a no-op). */
export type BookOutcome = "applied" | "duplicate";

/** How many applied updates a market recognises when they are sent again (docs/publishing.md#resending). */
export const RESEND_WINDOW = 1_024;

/**
 * Prices a book keeps formatted (`priceText`): twice the levels it holds, and at least this many.
 * Tied to the book's size, not to the most a book may hold: a market whose price drifts formats new
 * prices for ever, and at a fixed 20,000 each market's map grew toward ~2 MB whatever its depth.
 */
const PRICE_TEXTS_FLOOR = 256;
/**
 * Checksum level texts a book keeps at most: the levels near the top a checksum formats, a few
 * times over (a level that left the top is forgotten at the next clear), about 150 bytes each.
 */
const LEVEL_TEXTS = 8 * CHECKSUM_DEPTH;

/**
 * One side of an L2 book: quantities by price, and the prices kept sorted best first, so a
 * snapshot of depth N is a slice and the best price is element 0.
 */
class SideLevels {
  readonly quantities = new Map<bigint, bigint>();
  /** Best first: descending for bids, ascending for asks. */
  readonly prices: bigint[] = [];

  constructor(readonly side: BookSide) {}

  /** Every level, best first (what a batch that fails is rolled back to). */
  entries(): UnitLevel[] {
    return this.prices.map((price) => [price, this.quantities.get(price)!]);
  }

  /** True when `a` is a better price than `b` on this side. */
  better(a: bigint, b: bigint): boolean {
    return this.side === "bids" ? a > b : a < b;
  }

  set(price: bigint, quantity: bigint): void {
    if (quantity === 0n) {
      if (this.quantities.delete(price)) this.prices.splice(this.indexOf(price), 1);
      return;
    }
    if (!this.quantities.has(price)) this.prices.splice(this.indexOf(price), 0, price);
    this.quantities.set(price, quantity);
  }

  clear(): void {
    this.quantities.clear();
    this.prices.length = 0;
  }

  /** Binary search: the index of `price`, or where it would be inserted. */
  private indexOf(price: bigint): number {
    let low = 0;
    let high = this.prices.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.better(this.prices[middle]!, price)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The best price once `changes` are applied, without applying them. */
  bestAfter(changes: readonly UnitLevel[]): bigint | undefined {
    const removed = new Set<bigint>();
    let best: bigint | undefined;
    for (const [price, quantity] of changes) {
      if (quantity === 0n) removed.add(price);
      else if (best === undefined || this.better(price, best)) best = price;
    }
    const firstKept = this.prices.find((price) => !removed.has(price));
    if (firstKept !== undefined && (best === undefined || this.better(firstKept, best))) best = firstKept;
    return best;
  }

  sizeAfter(changes: readonly UnitLevel[]): number {
    let size = this.quantities.size;
    for (const [price, quantity] of changes) {
      const present = this.quantities.has(price);
      if (quantity === 0n && present) size -= 1;
      else if (quantity !== 0n && !present) size += 1;
    }
    return size;
  }
}

/**
 * A market's L2 order book: snapshot and delta application with sequence checks, never
 * crossed, always sorted. Pure (no storage); the MarketObject persists what it applies.
 */
export class OrderBook {
  readonly bids = new SideLevels("bids");
  readonly asks = new SideLevels("asks");
  sequence = 0;
  /** Time of the last applied update (ms). */
  updatedAt = 0;
  /** {@link bookFingerprint} of the last applied update or batch (stored with the book), to tell a replay from a conflict. */
  lastFingerprint = "";
  /**
   * The fingerprints of the last {@link RESEND_WINDOW} applied updates by sequence (in memory): a
   * publisher resending any of them after a lost answer is told `duplicate`, nothing changes.
   */
  private readonly recent = new Map<number, string>();
  private readonly priceTexts = new Map<bigint, string>();
  /** Per price, the quantity its checksum text (`price:quantity`) was made at, and the text: most of a checksum's levels stand as they stood. */
  private readonly levelTexts = new Map<bigint, { quantity: bigint; text: string }>();
  /** The levels formatted at a sequence, to `depth` a side: a checksum's 25 format 25, not the whole book. */
  private wireCache: { sequence: number; depth: number; bids: WireLevel[]; asks: WireLevel[] } | undefined;

  constructor(
    readonly priceScale: number,
    readonly quantityScale: number,
  ) {}

  /**
   * Validates and applies an update, all or nothing. The sequence never goes back:
   * - an identical replay of the last applied update is a no-op (`duplicate`);
   * - any other update at or below the current sequence is 409 `STALE_SEQUENCE`;
   * - a delta must be the current sequence + 1, else 409 `SEQUENCE_GAP` (send a snapshot);
   * - a snapshot may move forward by at most {@link MAX_SNAPSHOT_STEP}, else 409 `SEQUENCE_GAP`;
   * - a crossed or malformed book is 400 `VALIDATION_FAILED`.
   */
  apply(update: BookUpdate, now: number): BookOutcome {
    checkLevels(update, this.priceScale);
    const fingerprint = bookFingerprint(update);
    if (update.sequence <= this.sequence) {
      if ((update.sequence === this.sequence && fingerprint === this.lastFingerprint) || this.recent.get(update.sequence) === fingerprint) return "duplicate";
      throw problem(
        "STALE_SEQUENCE",
        `book ${update.type} sequence ${update.sequence} is not after the book's ${this.sequence}; a book never goes back — continue from ${this.sequence + 1}`,
        {
          currentSequence: this.sequence,
        },
      );
    }
    if (update.type === "delta") {
      if (update.sequence !== this.sequence + 1) {
        throw problem("SEQUENCE_GAP", `book delta sequence ${update.sequence} does not follow ${this.sequence}; send a snapshot`, {
          expectedSequence: this.sequence + 1,
          currentSequence: this.sequence,
        });
      }
      this.checkResult(this.bids.bestAfter(update.bids), this.asks.bestAfter(update.asks), this.bids.sizeAfter(update.bids), this.asks.sizeAfter(update.asks));
      this.setLevels(update);
    } else {
      if (update.bids.some(([, q]) => q === 0n) || update.asks.some(([, q]) => q === 0n)) {
        throw problem("VALIDATION_FAILED", "a book snapshot cannot hold a zero quantity");
      }
      if (update.sequence - this.sequence > MAX_SNAPSHOT_STEP) {
        throw problem("SEQUENCE_GAP", `a book snapshot may move the sequence forward by at most ${MAX_SNAPSHOT_STEP}; continue from ${this.sequence + 1}`, {
          currentSequence: this.sequence,
          maxSequence: this.sequence + MAX_SNAPSHOT_STEP,
        });
      }
      const bestBid = update.bids.reduce<bigint | undefined>((best, [p]) => (best === undefined || p > best ? p : best), undefined);
      const bestAsk = update.asks.reduce<bigint | undefined>((best, [p]) => (best === undefined || p < best ? p : best), undefined);
      this.checkResult(bestBid, bestAsk, update.bids.length, update.asks.length);
      this.setLevels(update);
    }
    this.sequence = update.sequence;
    this.updatedAt = now;
    this.lastFingerprint = fingerprint;
    this.wireCache = undefined;
    this.recent.set(update.sequence, fingerprint);
    if (this.recent.size > RESEND_WINDOW) this.recent.delete(this.recent.keys().next().value!);
    return "applied";
  }

  /**
   * Applies updates in order, all or nothing (docs/publishing.md#batches): the first that fails
   * leaves the book as it was before the batch, and its problem names it (`bookIndex`). An exact
   * resend of the last applied batch is a no-op (`duplicate`), as for one update.
   */
  applyAll(updates: readonly BookUpdate[], now: number): BookOutcome {
    if (updates.length === 1) return this.apply(updates[0]!, now);
    const fingerprint = batchFingerprint(updates);
    if (updates[updates.length - 1]!.sequence === this.sequence && fingerprint === this.lastFingerprint) return "duplicate";
    const before = {
      sequence: this.sequence,
      updatedAt: this.updatedAt,
      fingerprint: this.lastFingerprint,
      bids: this.bids.entries(),
      asks: this.asks.entries(),
    };
    let index = 0;
    let applied = 0;
    try {
      // Updates the book already has (a resend that overlaps what was applied) are no-ops.
      for (; index < updates.length; index++) if (this.apply(updates[index]!, now) === "applied") applied += 1;
    } catch (error) {
      for (const update of updates) if (update.sequence > before.sequence) this.recent.delete(update.sequence);
      this.restore(before.sequence, before.updatedAt, before.bids, before.asks, before.fingerprint);
      if (error instanceof ProblemError)
        throw problem(error.code, `book update ${index} of ${updates.length}: ${error.message}; nothing of the batch was applied`, {
          ...error.extras,
          bookIndex: index,
        });
      throw error;
    }
    if (applied === 0) return "duplicate";
    this.lastFingerprint = fingerprint;
    return "applied";
  }

  private checkResult(bestBid: bigint | undefined, bestAsk: bigint | undefined, bidCount: number, askCount: number): void {
    if (bestBid !== undefined && bestAsk !== undefined && bestBid >= bestAsk) {
      throw problem(
        "VALIDATION_FAILED",
        `the book would be crossed: best bid ${formatUnits(bestBid, this.priceScale)} >= best ask ${formatUnits(bestAsk, this.priceScale)}`,
      );
    }
    if (bidCount > MAX_LEVELS_PER_SIDE || askCount > MAX_LEVELS_PER_SIDE) {
      throw problem("VALIDATION_FAILED", `a book side may hold at most ${MAX_LEVELS_PER_SIDE} levels`);
    }
  }

  /** The best level of each side, in units (absent for an empty side). */
  top(): TopOfBook {
    const bid = this.bids.prices[0];
    const ask = this.asks.prices[0];
    return {
      bid: bid === undefined ? undefined : [bid, this.bids.quantities.get(bid)!],
      ask: ask === undefined ? undefined : [ask, this.asks.quantities.get(ask)!],
    };
  }

  /** Up to `depth` levels a side, best first, formatted at the market's scales. */
  levels(depth: number): { bids: WireLevel[]; asks: WireLevel[] } {
    const cached = this.wireCache;
    if (cached?.sequence !== this.sequence || cached.depth < depth) {
      this.wireCache = { sequence: this.sequence, depth, bids: this.formatSide(this.bids, depth), asks: this.formatSide(this.asks, depth) };
    }
    const { bids, asks } = this.wireCache!;
    return { bids: depth >= bids.length ? bids : bids.slice(0, depth), asks: depth >= asks.length ? asks : asks.slice(0, depth) };
  }

  private formatSide(side: SideLevels, depth: number): WireLevel[] {
    const prices = depth >= side.prices.length ? side.prices : side.prices.slice(0, depth);
    return prices.map((price) => [this.priceText(price), formatUnits(side.quantities.get(price)!, this.quantityScale)]);
  }

  /**
   * The book's checksum (docs/streams.md#checksums): `bookChecksum` of its best CHECKSUM_DEPTH levels a
   * side, the CRC carried level by level over texts made once while a level stands — a replay and
   * the live stream take one a message, where formatting 50 levels and joining them was most of
   * a message's cost.
   */
  checksum(): number {
    return this.sideChecksum(this.asks, crc32("|", this.sideChecksum(this.bids, 0)));
  }

  private sideChecksum(side: SideLevels, previous: number): number {
    let crc = previous;
    const depth = Math.min(CHECKSUM_DEPTH, side.prices.length);
    for (let i = 0; i < depth; i++) {
      const price = side.prices[i]!;
      const quantity = side.quantities.get(price)!;
      let level = this.levelTexts.get(price);
      if (level?.quantity !== quantity) {
        if (this.levelTexts.size >= LEVEL_TEXTS) this.levelTexts.clear();
        level = { quantity, text: `${this.priceText(price)}:${formatUnits(quantity, this.quantityScale)}` };
        this.levelTexts.set(price, level);
      }
      if (i > 0) crc = crc32(",", crc);
      crc = crc32(level.text, crc);
    }
    return crc;
  }

  /** A price as the wire writes it, formatted once while the book holds it (a replay formats its top levels every message). */
  private priceText(price: bigint): string {
    let text = this.priceTexts.get(price);
    if (text === undefined) {
      if (this.priceTexts.size >= Math.max(PRICE_TEXTS_FLOOR, 2 * (this.bids.prices.length + this.asks.prices.length))) this.priceTexts.clear();
      text = formatUnits(price, this.priceScale);
      this.priceTexts.set(price, text);
    }
    return text;
  }

  /**
   * Applies an update that was validated when it was published, as the book's history reads it
   * back (docs/history.md#book-history): no checks, no fingerprints.
   */
  replay(update: BookUpdate, time: number): void {
    this.setLevels(update);
    this.sequence = update.sequence;
    this.updatedAt = time;
    this.wireCache = undefined;
  }

  /** An update's levels into the book: a snapshot replaces both sides, a delta's zero quantity removes its level. */
  private setLevels(update: BookUpdate): void {
    if (update.type === "snapshot") {
      this.bids.clear();
      this.asks.clear();
    }
    for (const [price, quantity] of update.bids) this.bids.set(price, quantity);
    for (const [price, quantity] of update.asks) this.asks.set(price, quantity);
  }

  /** The fingerprints of the last applied updates, oldest first: what a snapshot of the book keeps so a restart recognises them too. */
  recentFingerprints(): [number, string][] {
    return [...this.recent];
  }

  /**
   * Replaces the whole state (used when restoring from storage); `recent`, the stored fingerprints
   * of the last applied updates (oldest first), so resends from before a restart are recognised
   * (left as they are without it: a batch undone keeps what came before it).
   */
  restore(
    sequence: number,
    updatedAt: number,
    bids: readonly UnitLevel[],
    asks: readonly UnitLevel[],
    lastFingerprint = "",
    recent?: readonly (readonly [number, string])[],
  ): void {
    if (recent) {
      this.recent.clear();
      for (const [at, fingerprint] of recent.slice(-RESEND_WINDOW)) if (at <= sequence) this.recent.set(at, fingerprint);
    }
    this.bids.clear();
    this.asks.clear();
    for (const [price, quantity] of bids) this.bids.set(price, quantity);
    for (const [price, quantity] of asks) this.asks.set(price, quantity);
    this.sequence = sequence;
    this.updatedAt = updatedAt;
    this.lastFingerprint = lastFingerprint;
    this.wireCache = undefined;
  }
}

function checkLevels(update: BookUpdate, priceScale: number): void {
  for (const side of ["bids", "asks"] as const) {
    const seen = new Set<bigint>();
    for (const [price, quantity] of update[side]) {
      if (price <= 0n) throw problem("VALIDATION_FAILED", `book ${side}: prices must be positive`);
      if (quantity < 0n) throw problem("VALIDATION_FAILED", `book ${side}: quantities cannot be negative`);
      if (seen.has(price)) throw problem("VALIDATION_FAILED", `book ${side}: price ${formatUnits(price, priceScale)} appears twice`);
      seen.add(price);
    }
  }
}
