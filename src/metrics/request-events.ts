/**
 * Workers Analytics Engine's data points for the isolate's requests (docs/operations.md#analytics-engine),
 * aggregated: one point per kind of request (route, method, status, problem code, who, and the key
 * id of a refused or failed signed request) per POINT_WINDOW_MS (25 s) of the isolate's, with how
 * many there were and their time — Cloudflare bills each
 * point past 10 million a month: one per request at the venue's 11,000 requests a second was about
 * $7,000 a month, and one per kind a second (or per key of a successful signed request, whose usage
 * its guard already counts by the minute: docs/limits.md#your-keys-usage) still hundreds. What an
 * isolate holds is one entry per kind, at most MAX_KINDS_HELD (past it, the points are written early).
 */

/** The part of Analytics Engine's binding this writes through. */
export interface PointSink {
  writeDataPoint(point: { indexes?: string[]; blobs?: string[]; doubles?: number[] }): void;
}

/** One request's kind and time. */
export interface RequestEvent {
  route: string;
  method: string;
  status: number;
  code: string;
  who: string;
  keyId: string;
  ms: number;
}

/**
 * What an isolate holds is written once it spans this long (ANALYTICS_WINDOW_MS): by the request
 * that finds it so, or by the timer its first request left in `waitUntil` — which Cloudflare lets
 * run 30 s past an answer, so the window is a little shorter than that.
 */
export const POINT_WINDOW_MS = 25_000;

/** A window's timer: where it waits (`waitUntil`), what runs once it has written, and the window's length. */
export interface WindowTimer {
  waitUntil: (promise: Promise<unknown>) => void;
  written?: () => Promise<unknown> | undefined;
  windowMs?: number;
}

/** Kinds of request one isolate holds before writing them early. */
export const MAX_KINDS_HELD = 1_000;

interface Held {
  event: RequestEvent;
  count: number;
  totalMs: number;
  maxMs: number;
}

/**
 * @example
 * const events = new RequestEvents();
 * events.add(env.REQUEST_EVENTS, Date.now(), { route, method, status, code, who, keyId, ms });
 * events.flush(env.REQUEST_EVENTS); // when the isolate's metrics are handed on
 */
export class RequestEvents {
  /** When what is held began (its first request's time). */
  private openedAt = Number.NEGATIVE_INFINITY;
  private readonly held = new Map<string, Held>();

  /**
   * Counts a request into its kind's point. What is held is written by the first request once it
   * spans the window (`timer.windowMs`, POINT_WINDOW_MS), or early once MAX_KINDS_HELD kinds are
   * held; the request that opens a window leaves a timer in `timer.waitUntil` that writes it then,
   * so a quiet isolate's last points are written too, and then runs `timer.written` in the same
   * `waitUntil` (the isolate hands on its count of points). A successful request's point names no
   * key: per-key use is the guard's count; a refusal or failure keeps its key id, so an operator
   * sees whom it hit.
   */
  add(sink: PointSink | undefined, now: number, event: RequestEvent, timer?: WindowTimer): void {
    if (!sink) return;
    // Never past POINT_WINDOW_MS: a longer timer would outlive its waitUntil and lose a quiet isolate's points.
    const windowMs = Math.min(timer?.windowMs ?? POINT_WINDOW_MS, POINT_WINDOW_MS);
    if (now - this.openedAt >= windowMs || this.held.size >= MAX_KINDS_HELD) this.flush(sink);
    if (this.held.size === 0) {
      this.openedAt = now;
      const opened = now;
      timer?.waitUntil(
        new Promise((resolve) => setTimeout(resolve, windowMs)).then(() => {
          // Only the window it was left for: a later one has its own timer.
          if (this.openedAt !== opened || this.held.size === 0) return;
          this.flush(sink);
          return timer.written?.();
        }),
      );
    }
    const keyId = event.status >= 400 ? event.keyId : "";
    const kind = [event.route, event.method, event.status, event.code, event.who, keyId].join("\u0000");
    const entry = this.held.get(kind);
    if (entry) {
      entry.count += 1;
      entry.totalMs += event.ms;
      entry.maxMs = Math.max(entry.maxMs, event.ms);
    } else this.held.set(kind, { event: { ...event, keyId }, count: 1, totalMs: event.ms, maxMs: event.ms });
  }

  /**
   * Writes what is held: `index1` the route; `blob1`…`blob5` route, method, problem code, who, key
   * id (of a refused or failed request); `double1` the status, `double2` the mean ms, `double3` the requests, `double4` the most ms.
   */
  flush(sink: PointSink | undefined): void {
    if (!sink) return;
    for (const { event, count, totalMs, maxMs } of this.held.values()) {
      sink.writeDataPoint({
        indexes: [event.route.slice(0, 96)],
        blobs: [event.route, event.method, event.code, event.who, event.keyId],
        doubles: [event.status, totalMs / count, count, maxMs],
      });
    }
    this.held.clear();
  }
}
