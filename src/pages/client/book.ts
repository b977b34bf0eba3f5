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
  /** Price → quantity, both exactly as the service wrote them. */
  readonly bids = new Map<string, string>();
  readonly asks = new Map<string, string>();

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
        if (Number(quantity) === 0) this[side].delete(price);
        else this[side].set(price, quantity);
      }
    }
    this.sequence = message.sequence;
    return true;
  }

  /** Best first (bids descending, asks ascending), as exact strings for display. */
  ladder(side: "bids" | "asks", depth = Infinity): Level[] {
    const levels = [...this[side]];
    levels.sort((a, b) => (side === "bids" ? Number(b[0]) - Number(a[0]) : Number(a[0]) - Number(b[0])));
    return levels.slice(0, depth);
  }

  /** Cumulative quantity from the touch outwards, for the depth chart (numbers: it is a drawing). */
  depth(side: "bids" | "asks", levels = 50): [price: number, cumulative: number][] {
    let total = 0;
    return this.ladder(side, levels).map(([price, quantity]) => [Number(price), (total += Number(quantity))]);
  }
}
