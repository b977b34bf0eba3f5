/**
 * The market page's order book, pure: snapshot and deltas with gap detection, sorted ladders
 * and cumulative depth. Runs in the browser; unit-tested on its own.
 */
export type Level = [price: string, quantity: string];

export interface BookMessage {
  type: "snapshot" | "delta";
  sequence: number;
  bids: Level[];
  asks: Level[];
}

export class ClientBook {
  sequence = 0;
  ready = false;
  readonly bids = new Map<string, number>();
  readonly asks = new Map<string, number>();

  /** Applies a message; returns false on a sequence gap (the caller resubscribes). */
  apply(message: BookMessage): boolean {
    if (message.type === "snapshot") {
      this.bids.clear();
      this.asks.clear();
      this.ready = true;
    } else if (!this.ready || message.sequence !== this.sequence + 1) {
      this.ready = false;
      return false;
    }
    for (const side of ["bids", "asks"] as const) {
      for (const [price, quantity] of message[side]) {
        const q = Number(quantity);
        if (q === 0) this[side].delete(price);
        else this[side].set(price, q);
      }
    }
    this.sequence = message.sequence;
    return true;
  }

  /** Best first: bids descending, asks ascending. */
  ladder(side: "bids" | "asks", depth = Infinity): [number, number][] {
    const levels = [...this[side]].map(([p, q]) => [Number(p), q] as [number, number]);
    levels.sort((a, b) => (side === "bids" ? b[0] - a[0] : a[0] - b[0]));
    return levels.slice(0, depth);
  }

  /** Cumulative quantity from the touch outwards, for the depth chart. */
  depth(side: "bids" | "asks", levels = 50): [price: number, cumulative: number][] {
    let total = 0;
    return this.ladder(side, levels).map(([price, quantity]) => [price, (total += quantity)]);
  }
}
