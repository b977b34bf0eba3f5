import type { Clock } from "./pacing.js";

/**
 * The service's clock as seen from here: signed requests must carry a timestamp within
 * `recvWindow` before and 1 s after the server's time, so a client whose clock is off by a few
 * seconds is refused unless it corrects by the measured offset.
 */
export class ServerClock {
  /** Server time − local time (ms), once measured. */
  offsetMs: number | undefined;

  constructor(private readonly clock: Clock) {}

  /** Server time now (Unix ms) by the last measurement, or the local clock before any. */
  now(): number {
    return Math.round(this.clock.now() + (this.offsetMs ?? 0));
  }

  /**
   * Measures the offset from a `GET /api/time` round trip: the server's time is taken to be that
   * of the round trip's midpoint, so the error is at most half the round trip.
   */
  async sync(serverTime: () => Promise<number>): Promise<number> {
    const sent = this.clock.now();
    const time = await serverTime();
    const received = this.clock.now();
    this.offsetMs = time - (sent + received) / 2;
    return this.offsetMs;
  }

  /** Adopts a server time reported with an answer (e.g. `serverTime` of `TIMESTAMP_OUT_OF_WINDOW`). */
  adopt(serverTime: number): void {
    this.offsetMs = serverTime - this.clock.now();
  }
}
