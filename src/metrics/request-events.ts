import { sleep } from "../core/cross-request-wait";
/**
 * Workers Analytics Engine's data points for the isolate's requests (docs/operations.md#analytics-engine),
 * aggregated: one point per kind of request (route, method, status, problem code, who, and the key
 * id of a refused or failed signed request) per POINT_WINDOW_MS (25 s) of the isolate's, with how
 * many there were and their time — Cloudflare bills each
 * point past 10 million a month: one per request at the venue's 11,000 requests a second was about
 * $7,000 a month, and one per kind a second (or per key of a successful signed request, whose usage
 * its guard already counts by the minute: docs/limits.md#your-keys-usage) still hundreds; a point
 * per kind every 25 s, $354 at the venue (docs/capacity.md#the-whole-bill), so a fast success's
 * point is written one window in `sampleEvery` (ANALYTICS_SUCCESS_SAMPLE), standing for that many.
 * What an isolate holds is one entry per kind, at most MAX_KINDS_HELD (past it, the points are
 * written early).
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

/**
 * A window's timer: where it waits (`waitUntil`), what runs once it has written, the window's
 * length, and one in how many windows a fast success's point is written (1: every window).
 */
export interface WindowTimer {
  waitUntil: (promise: Promise<unknown>) => void;
  written?: () => Promise<unknown> | undefined;
  windowMs?: number;
  sampleEvery?: number;
}

/** One in how many windows a fast success's point is written, unless ANALYTICS_SUCCESS_SAMPLE says otherwise. */
export const SUCCESS_SAMPLE_EVERY = 10;

/** A success whose longest answer took this long is always written: the slow ones are what an operator looks for. */
export const SLOW_MS = 1_000;

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
  /** The sample of the window held (the setting as its last request read it). */
  private sampleEvery = 1;

  /** @param random the draw that keeps a success's point (injected by tests) */
  constructor(private readonly random: () => number = Math.random) {}

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
    this.sampleEvery = Math.max(1, Math.floor(timer?.sampleEvery ?? 1));
    if (this.held.size === 0) {
      this.openedAt = now;
      const opened = now;
      timer?.waitUntil(
        sleep(windowMs).then(() => {
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
   * id (of a refused or failed request); `double1` the status, `double2` the mean ms, `double3` the
   * requests it stands for, `double4` the most ms, `double5` one in how many such points were kept.
   * A success under SLOW_MS is kept with chance 1 / `sampleEvery` and then stands for `sampleEvery`
   * times its requests, so sums of `double3` stay unbiased; refusals, failures and slow successes
   * are always kept, as counted.
   */
  flush(sink: PointSink | undefined): void {
    if (!sink) return;
    for (const { event, count, totalMs, maxMs } of this.held.values()) {
      const sampled = event.status < 400 && maxMs < SLOW_MS ? this.sampleEvery : 1;
      if (sampled > 1 && this.random() * sampled >= 1) continue;
      sink.writeDataPoint({
        indexes: [event.route.slice(0, 96)],
        blobs: [event.route, event.method, event.code, event.who, event.keyId],
        doubles: [event.status, totalMs / count, count * sampled, maxMs, sampled],
      });
    }
    this.held.clear();
  }
}
