import { ensureRegistry } from "../registry/copy";
import { type Attachment, attachmentOf, headerOf, packNames, saveAttachment } from "./attachment";
import { type DialectConnection, type DialectStream, decodeNames, type StreamDialect, type SubscribeOutcome } from "./dialect";
import { DialectFanout } from "./dialect-fanout";
import { MAX_STREAM_NAME_BYTES, MAX_STREAMS_PER_CONNECTION, MAX_WARNINGS, type StreamName } from "./protocol";
import type { WireBook } from "./wire-book";

/** What a shard's dialect connections need of it. */
export interface DialectHost {
  readonly env: Env;
  send(ws: WebSocket, message: unknown): void;
  closeForPolicy(ws: WebSocket, reason: string): void;
  /** Makes the streams' sources publish here; false (the streams taken back out) when that failed. */
  ensureSources(ws: WebSocket, adding: DialectStream[]): Promise<boolean>;
  /** The shard's copy of a market's book, if it has one. */
  bookOf(symbol: string): WireBook | undefined;
}

/**
 * A shard's connections in other exchanges' protocols (src/streams/dialect.ts): per dialect, its
 * connections' subscriptions and their rendering (`DialectFanout`), and what a dialect may do with
 * one of its connections — subscribe within its limits (its stream count, and the names' bytes in
 * the connection's attachment), unsubscribe, set options, count a bad message.
 */
export class DialectConnections {
  private readonly fanouts = new Map<string, DialectFanout>();

  constructor(private readonly host: DialectHost) {}

  fanoutOf(dialect: StreamDialect): DialectFanout {
    let fanout = this.fanouts.get(dialect.id);
    if (!fanout)
      this.fanouts.set(
        dialect.id,
        (fanout = new DialectFanout(
          dialect,
          (ws, text) => this.host.send(ws, text),
          (ws) => headerOf(ws).dialect?.options ?? {},
        )),
      );
    return fanout;
  }

  /** A connection woken from hibernation: its streams, from its attachment. */
  restore(ws: WebSocket, dialect: StreamDialect, attachment: Attachment): void {
    for (const name of attachment.streams) {
      const stream = dialect.parse(name);
      if (stream) this.fanoutOf(dialect).add(ws, stream);
    }
  }

  /** Whether a connection of any dialect here wants this native stream. */
  wants(name: string): boolean {
    for (const fanout of this.fanouts.values()) if (fanout.wants(name)) return true;
    return false;
  }

  /** A native event, rendered once per dialect and sent to its subscribers. */
  deliver(stream: StreamName, data: unknown, book: WireBook | undefined): void {
    for (const fanout of this.fanouts.values()) fanout.deliver(stream, data, book);
  }

  /** Per dialect, the names of a market's streams (a delisting ends them). */
  namesOf(symbol: string): Map<string, Set<string>> {
    return new Map([...this.fanouts].map(([id, fanout]) => [id, fanout.namesOf(symbol)]));
  }

  /** A connection of dialect `id` holds these names no more. */
  remove(id: string, ws: WebSocket, names: Iterable<string>): void {
    const fanout = this.fanouts.get(id);
    if (fanout) for (const name of names) fanout.remove(ws, name);
  }

  /** A connection opened with streams named (the dialect's own header): subscribed as it opens. */
  async connect(ws: WebSocket, dialect: StreamDialect, header: string | null): Promise<void> {
    const names = decodeNames(header, dialect.maxStreams ?? MAX_STREAMS_PER_CONNECTION);
    if (names.length === 0) return;
    await ensureRegistry(this.host.env);
    await dialect.connect(this.connectionOf(ws, dialect), names);
  }

  /** What a dialect may do with one of its connections (src/streams/dialect.ts). */
  connectionOf(ws: WebSocket, dialect: StreamDialect): DialectConnection {
    return {
      get streams() {
        return attachmentOf(ws).streams;
      },
      get options() {
        return attachmentOf(ws).dialect?.options ?? {};
      },
      setOptions: (options) => {
        const attachment = attachmentOf(ws);
        attachment.dialect = { id: dialect.id, options };
        saveAttachment(ws, attachment);
      },
      send: (text) => this.host.send(ws, text),
      warn: () => {
        const attachment = attachmentOf(ws);
        attachment.warnings += 1;
        saveAttachment(ws, attachment);
        if (attachment.warnings <= MAX_WARNINGS) return false;
        this.host.closeForPolicy(ws, `more than ${MAX_WARNINGS} invalid messages`);
        return true;
      },
      subscribe: (streams, ack) => this.subscribe(ws, dialect, streams, ack),
      unsubscribe: (names) => {
        const gone = new Set(names);
        const attachment = attachmentOf(ws);
        for (const name of attachment.streams) if (gone.has(name)) this.fanoutOf(dialect).remove(ws, name);
        attachment.streams = attachment.streams.filter((name) => !gone.has(name));
        saveAttachment(ws, attachment);
      },
    };
  }

  /** Adds a dialect's streams to a connection, all or nothing; `ack` goes before any greeting. */
  private async subscribe(ws: WebSocket, dialect: StreamDialect, asked: readonly DialectStream[], ack: string | null): Promise<SubscribeOutcome> {
    const attachment = attachmentOf(ws);
    const holding = new Set(attachment.streams);
    const streams = [...new Map(asked.filter((s) => !holding.has(s.name)).map((s) => [s.name, s])).values()];
    const after = [...attachment.streams, ...streams.map((s) => s.name)];
    if (after.length > (dialect.maxStreams ?? MAX_STREAMS_PER_CONNECTION) || packNames(after).length > MAX_STREAM_NAME_BYTES) return "too-many";
    attachment.streams.push(...streams.map((s) => s.name));
    saveAttachment(ws, attachment);
    if (!(await this.host.ensureSources(ws, streams))) return "failed";
    if (ws.readyState !== WebSocket.OPEN) return "closed";
    const held = attachmentOf(ws).streams;
    const added = streams.filter((s) => held.includes(s.name));
    const fanout = this.fanoutOf(dialect);
    for (const stream of added) fanout.add(ws, stream);
    if (ack !== null) this.host.send(ws, ack);
    for (const stream of added) fanout.greet(ws, stream, this.host.bookOf(stream.native.subject));
    return "subscribed";
  }
}
