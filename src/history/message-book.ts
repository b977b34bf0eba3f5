/**
 * A book rebuilt from its replay messages (docs/tardis.md): what a client of the book's history
 * holds. Each message's levels are applied, and a whole-book message inside a stream (a
 * publisher's resync) comes back as the diff that turns the book held into it, so a reader of
 * diffs only (Binance's `depthUpdate`, Tardis's incremental rows) keeps a whole book. Pure.
 */
import { exactAtScale, parseDecimal } from "../core/decimal";
import { OrderBook, type UnitLevel, type WireLevel } from "../domain/order-book";
import type { ReplayBookMessage } from "./book-replay";

type Side = "bids" | "asks";

export class MessageBook {
  private readonly book: OrderBook;

  constructor(private readonly scales: { priceScale: number; quantityScale: number }) {
    this.book = new OrderBook(scales.priceScale, scales.quantityScale);
  }

  get sequence(): number {
    return this.book.sequence;
  }

  /** The best `depth` levels of each side, as text. */
  levels(depth: number): { bids: WireLevel[]; asks: WireLevel[] } {
    return this.book.levels(depth);
  }

  /**
   * Applies a message; returns the levels it changed, `"0"` for a removed one: a delta's own, or
   * for a whole book the diff from the book held (removed levels, then new or changed ones).
   */
  apply(message: ReplayBookMessage): { bids: WireLevel[]; asks: WireLevel[] } {
    const whole = message.type === "snapshot";
    const changed = whole ? { bids: this.diff("bids", message.bids), asks: this.diff("asks", message.asks) } : { bids: message.bids, asks: message.asks };
    const units = (levels: readonly WireLevel[]): UnitLevel[] =>
      levels.map(([price, quantity]) => [this.units(price, this.scales.priceScale), this.units(quantity, this.scales.quantityScale)]);
    this.book.replay({ type: message.type, sequence: message.sequence, bids: units(message.bids), asks: units(message.asks) }, message.time);
    return changed;
  }

  private units(text: string, scale: number): bigint {
    const units = exactAtScale(parseDecimal(text), scale);
    if (units === null) throw new Error(`${text} is finer than the market's scale ${scale}`);
    return units;
  }

  private diff(side: Side, next: readonly WireLevel[]): WireLevel[] {
    const held = new Map(this.book.levels(Number.MAX_SAFE_INTEGER)[side]);
    const after = new Map(next);
    const out: WireLevel[] = [];
    for (const price of held.keys()) if (!after.has(price)) out.push([price, "0"]);
    for (const [price, quantity] of after) if (held.get(price) !== quantity) out.push([price, quantity]);
    return out;
  }
}
