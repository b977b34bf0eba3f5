/** A price level as Binance sends it: [price, quantity]. */
export type Level = [string, string];

/**
 * A local book kept exactly as Binance documents it (docs/binance.md#a-local-order-book): diff
 * events are buffered until the REST snapshot, those it covers are dropped, the first one applied
 * may overlap it, and every later one must follow the last (`U` = previous `u` + 1) — a gap is
 * counted, not applied. For the tests in workerd and against `npm start` alike.
 */
export class BinanceLocalBook {
  lastUpdateId = -1;
  gaps = 0;
  private readonly bids = new Map<string, string>();
  private readonly asks = new Map<string, string>();
  private buffered: any[] = [];
  private first = true;

  event(diff: any): void {
    if (this.lastUpdateId < 0) return void this.buffered.push(diff);
    if (diff.u <= this.lastUpdateId) return;
    // The first event may overlap the snapshot (U ≤ lastUpdateId + 1 ≤ u); every later one follows the last.
    const follows = this.first ? diff.U <= this.lastUpdateId + 1 : diff.U === this.lastUpdateId + 1;
    if (!follows) {
      this.gaps += 1;
      return;
    }
    this.first = false;
    for (const [side, levels] of [
      [this.bids, diff.b],
      [this.asks, diff.a],
    ] as const) {
      for (const [price, quantity] of levels as Level[]) Number(quantity) === 0 ? side.delete(price) : side.set(price, quantity);
    }
    this.lastUpdateId = diff.u;
  }

  snapshot(depth: { lastUpdateId: number; bids: Level[]; asks: Level[] }): void {
    this.lastUpdateId = depth.lastUpdateId;
    for (const [price, quantity] of depth.bids) this.bids.set(price, quantity);
    for (const [price, quantity] of depth.asks) this.asks.set(price, quantity);
    for (const diff of this.buffered.splice(0)) this.event(diff);
  }

  /** Best first, at most `depth` a side (as REST `depth` answers). */
  levels(depth = Number.POSITIVE_INFINITY): { bids: Level[]; asks: Level[] } {
    const order = (side: Map<string, string>, descending: boolean) =>
      [...side].sort(([a], [b]) => (descending ? Number(b) - Number(a) : Number(a) - Number(b))).slice(0, depth);
    return { bids: order(this.bids, true), asks: order(this.asks, false) };
  }
}
