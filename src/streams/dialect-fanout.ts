import type { DialectOptions, DialectStream, StreamDialect } from "./dialect";
import type { StreamName } from "./protocol";
import type { WireBook } from "./wire-book";

/**
 * A shard's subscribers of one dialect: which sockets hold which of its streams, and each native
 * event rendered into the frames those streams carry — once per stream and framing, then sent as
 * the same string to every socket that holds it.
 */
export class DialectFanout {
  /** Per dialect stream name, the stream and the sockets that hold it. */
  private readonly held = new Map<string, { stream: DialectStream; sockets: Set<WebSocket> }>();
  /** Per native stream, the dialect's streams made from it that have a subscriber here. */
  private readonly views = new Map<string, Map<string, DialectStream>>();

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
      if (payloads.length > 0) this.sendAll(view, payloads);
    }
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
