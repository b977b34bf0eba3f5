import type { DialectOptions, DialectStream, StreamDialect } from "./dialect";
import type { StreamName } from "./protocol";
import type { WireBook } from "./wire-book";

/**
 * A paced stream's payloads waiting for their turn — one, what came since merged into it; more
 * only where a gap kept two apart (at most MAX_PACED_GAPS, the oldest dropped: a gap stays a gap)
 * — and when the last went.
 */
interface Paced {
  pending: unknown[];
  sentAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

const MAX_PACED_GAPS = 16;

/**
 * A shard's subscribers of one dialect: which sockets hold which of its streams, and each native
 * event rendered into the frames those streams carry — once per stream and framing, then sent as
 * the same string to every socket that holds it. A paced stream (`paceMs`: Binance's `@depth`, a
 * second) holds one payload, what came since merged into it, and sends it at most once a pace:
 * what it holds is a payload per paced stream name (a few where gaps kept them apart), however
 * fast the market moves.
 */
export class DialectFanout {
  /** Per dialect stream name, the stream and the sockets that hold it. */
  private readonly held = new Map<string, { stream: DialectStream; sockets: Set<WebSocket> }>();
  /** Per native stream, the dialect's streams made from it that have a subscriber here. */
  private readonly views = new Map<string, Map<string, DialectStream>>();
  /** Per paced stream name with a subscriber here, its waiting payload. */
  private readonly paced = new Map<string, Paced>();

  constructor(
    private readonly dialect: StreamDialect,
    private readonly send: (ws: WebSocket, text: string) => void,
    private readonly optionsOf: (ws: WebSocket) => DialectOptions,
  ) {}

  add(ws: WebSocket, stream: DialectStream): void {
    let entry = this.held.get(stream.name);
    if (!entry) this.held.set(stream.name, (entry = { stream, sockets: new Set() }));
    entry.sockets.add(ws);
    let views = this.views.get(stream.native.name);
    if (!views) this.views.set(stream.native.name, (views = new Map()));
    views.set(stream.name, stream);
  }

  /** By name: a stream whose market went away since still leaves. */
  remove(ws: WebSocket, name: string): void {
    const entry = this.held.get(name);
    if (!entry?.sockets.delete(ws) || entry.sockets.size > 0) return;
    this.held.delete(name);
    clearTimeout(this.paced.get(name)?.timer);
    this.paced.delete(name);
    const views = this.views.get(entry.stream.native.name);
    views?.delete(name);
    if (views?.size === 0) this.views.delete(entry.stream.native.name);
  }

  /** True while a stream made from this native stream has a subscriber here. */
  wants(nativeName: string): boolean {
    return this.views.has(nativeName);
  }

  /** The names held here whose native stream is one of the market's (it was delisted). */
  namesOf(symbol: string): Set<string> {
    return new Set([...this.held].filter(([, entry]) => entry.stream.native.subject === symbol).map(([name]) => name));
  }

  /** Sends the frames one native event makes on every stream made from it. */
  deliver(native: StreamName, data: unknown, book: WireBook | undefined): void {
    const views = this.views.get(native.name);
    if (!views) return;
    const now = Date.now();
    for (const view of views.values()) {
      const payloads = this.dialect.render(view, data, book, now);
      if (payloads.length === 0) continue;
      if (view.paceMs) this.pace(view, payloads, now);
      else this.sendAll(view, payloads);
    }
  }

  /** Merges a paced stream's payloads into what it holds, and sends that when its pace allows. */
  private pace(view: DialectStream, payloads: unknown[], now: number): void {
    let entry = this.paced.get(view.name);
    if (!entry) this.paced.set(view.name, (entry = { pending: [], sentAt: Number.NEGATIVE_INFINITY, timer: undefined }));
    const { pending } = entry;
    for (const payload of payloads) {
      const merged = pending.length > 0 ? (this.dialect.merge?.(view, pending[pending.length - 1], payload) ?? null) : null;
      if (merged !== null) pending[pending.length - 1] = merged;
      else if (pending.push(payload) > MAX_PACED_GAPS) pending.shift();
    }
    if (entry.timer === undefined) entry.timer = setTimeout(() => this.flush(view), Math.max(0, entry.sentAt + view.paceMs! - now));
  }

  private flush(view: DialectStream): void {
    const entry = this.paced.get(view.name);
    if (!entry) return;
    entry.timer = undefined;
    if (entry.pending.length === 0) return;
    const payloads = entry.pending;
    entry.pending = [];
    entry.sentAt = Date.now();
    this.sendAll(view, payloads);
  }

  /** What a new subscriber gets at once (a partial book, say), so it need not wait for the next change. */
  greet(ws: WebSocket, stream: DialectStream, book: WireBook | undefined): void {
    const framing = this.dialect.framing(this.optionsOf(ws));
    for (const payload of this.dialect.greet(stream, book)) this.send(ws, this.dialect.frame(stream, payload, framing));
  }

  private sendAll(view: DialectStream, payloads: unknown[]): void {
    const texts = new Map<string, string[]>();
    for (const ws of this.held.get(view.name)?.sockets ?? []) {
      const framing = this.dialect.framing(this.optionsOf(ws));
      let framed = texts.get(framing);
      if (!framed) texts.set(framing, (framed = payloads.map((p) => this.dialect.frame(view, p, framing))));
      for (const text of framed) this.send(ws, text);
    }
  }
}
