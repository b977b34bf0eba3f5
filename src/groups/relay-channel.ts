import type { RelayOp } from "./messages";

/**
 * A market's ordered channel to its group relay: one call in flight, and whatever the market
 * sends meanwhile goes in the next call, in order. A quiet market pays no delay; a busy one
 * makes one call per round trip, whatever its update rate.
 */
export class RelayChannel {
  private queued: RelayOp[] = [];
  private sending = false;

  constructor(
    private readonly deliver: (ops: RelayOp[]) => Promise<void>,
    private readonly keepAlive: (work: Promise<unknown>) => void,
  ) {}

  send(op: RelayOp): void {
    this.queued.push(op);
    if (!this.sending) this.keepAlive(this.drain());
  }

  private async drain(): Promise<void> {
    this.sending = true;
    try {
      while (this.queued.length > 0) {
        const ops = this.queued;
        this.queued = [];
        try {
          await this.deliver(ops);
        } catch (error) {
          // Lost events: a shard sees the book's sequence jump and asks for a new base; the next
          // summary (at most a second later) replaces a lost one.
          console.error("relay call failed", String(error));
        }
      }
    } finally {
      this.sending = false;
    }
  }
}
