/**
 * At most `most` bytes in any `ms`: what a connection held by an isolate may send its client
 * (docs/security.md#bounded-memory). The runtime says nothing of what a client has not read yet
 * (a server socket's `bufferedAmount` is always 0 on workerd, measured), so the bytes a client
 * that stops reading can make an isolate hold are bounded by rate instead: at most `most` a window.
 *
 * @example
 * const sent = new ByteWindow(4 * 1024 * 1024, 60_000);
 * if (sent.take(text.length, Date.now())) ws.send(text);
 * else ws.send(refusal);
 */
export class ByteWindow {
  private readonly sent: { at: number; bytes: number }[] = [];
  private total = 0;

  constructor(
    readonly most: number,
    readonly ms: number,
  ) {}

  /** Takes `bytes` at `now` if the window has room for them. */
  take(bytes: number, now: number): boolean {
    this.expire(now);
    if (this.total + bytes > this.most) return false;
    this.force(bytes, now);
    return true;
  }

  /** Ms until `bytes` more would fit (one larger than `most` fits once the window is empty). */
  waitFor(bytes: number, now: number): number {
    this.expire(now);
    let total = this.total;
    let wait = 0;
    for (const { at, bytes: n } of this.sent) {
      if (total + bytes <= this.most || total === 0) break;
      total -= n;
      wait = at + this.ms - now;
    }
    return Math.max(0, wait);
  }

  /** Takes `bytes` at `now` whatever the window holds (after `waitFor`, for one larger than `most`). */
  force(bytes: number, now: number): void {
    this.expire(now);
    this.sent.push({ at: now, bytes });
    this.total += bytes;
  }

  private expire(now: number): void {
    while (this.sent.length > 0 && this.sent[0]!.at <= now - this.ms) this.total -= this.sent.shift()!.bytes;
  }
}
