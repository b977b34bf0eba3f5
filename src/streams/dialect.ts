/**
 * The one interface through which a dialect (another exchange's stream protocol, such as
 * Binance's in src/binance/) speaks on the shards: what its names mean, how it answers its
 * clients' messages and how it renders native events into its frames. The StreamHub knows no
 * dialect by name: the worker registers them at start (`registerDialect`), and a dialect's
 * own upgrade route marks its connections (`DIALECT_HEADER`).
 */
import type { PlannedClose } from "./planned-close";
import type { StreamName } from "./protocol";
import type { WireBook } from "./wire-book";

/** Set by a dialect's route: the dialect's id. A client's own header of any `X-Stream-` name is dropped. */
export const DIALECT_HEADER = "X-Stream-Dialect";
/** The names to subscribe at connect, each percent-encoded, joined by commas. */
export const DIALECT_STREAMS_HEADER = "X-Stream-Dialect-Streams";
/** The connection's options as a JSON object (Binance: `{"combined":true}`). */
export const DIALECT_OPTIONS_HEADER = "X-Stream-Dialect-Options";

/** A dialect's stream: its name as the client wrote it, and the native stream it is made from. */
export interface DialectStream {
  name: string;
  native: StreamName;
  /**
   * At most one frame per this many ms: what the events between say is merged into it
   * (`StreamDialect.merge`). Unset: a frame per event (as the native stream paces it).
   */
  paceMs?: number;
}

/** A connection's options, kept through hibernation in its attachment (small: a few flags). */
export type DialectOptions = Readonly<Record<string, string | number | boolean>>;

/** How a subscribe ended: the shard applies the limits and joins the sources; the dialect words the answer. */
export type SubscribeOutcome = "subscribed" | "too-many" | "failed" | "closed";

/** One connection as the shard lends it to its dialect while a message is handled. */
export interface DialectConnection {
  /** The streams it holds, by the dialect's names, in subscription order. */
  readonly streams: readonly string[];
  readonly options: DialectOptions;
  setOptions(options: DialectOptions): void;
  send(text: string): void;
  /** Counts an invalid message; true when that closed the connection (the caller sends nothing more). */
  warn(): boolean;
  /**
   * Adds streams (names it holds already are skipped), all or none: within the per-connection
   * limit, and once each source publishes to this shard. `ack` (if any) is sent once they are
   * subscribed, before any greeting (a partial book for a new subscriber).
   */
  subscribe(streams: readonly DialectStream[], ack: string | null): Promise<SubscribeOutcome>;
  unsubscribe(names: readonly string[]): void;
}

export interface StreamDialect {
  /** The value of `DIALECT_HEADER` that marks its connections. */
  readonly id: string;
  /** Incoming messages a connection may send in any rolling second (the native 10 when unset); one more closes it with 1008. */
  readonly messagesPerSecond?: number;
  /** Bytes an incoming message may have (the native MAX_MESSAGE_BYTES when unset); one more closes it with 1008. */
  readonly maxMessageBytes?: number;
  /** Streams a connection may hold (the native 50 when unset), their names within MAX_STREAM_NAME_BYTES whatever this says. */
  readonly maxStreams?: number;
  /** The stream a name means, or null when it is none (against the shard's registry copy). */
  parse(name: unknown): DialectStream | null;
  /** The streams named at connect (`DIALECT_STREAMS_HEADER`). */
  connect(connection: DialectConnection, names: readonly string[]): Promise<void>;
  /** A client's message, answered in the dialect's words. */
  message(connection: DialectConnection, message: string | ArrayBuffer): Promise<void>;
  /**
   * The payloads one native event makes on one of its streams (none when it says nothing there):
   * `data` as native subscribers get it, `book` the shard's copy of the market's book after it.
   */
  render(stream: DialectStream, data: unknown, book: WireBook | undefined, now: number): unknown[];
  /**
   * One payload saying what `earlier` and then `later` said, for a paced stream (`paceMs`); null
   * when they cannot be one (a gap between them): the two then go as two, together, at the pace.
   */
  merge?(stream: DialectStream, earlier: unknown, later: unknown): unknown | null;
  /** What a new subscriber of the stream gets at once, before the next event (none for most). */
  greet(stream: DialectStream, book: WireBook | undefined): unknown[];
  /** The framings a connection's options choose; payloads are framed once per framing in use. */
  framing(options: DialectOptions): string;
  frame(stream: DialectStream, payload: unknown, framing: string): string;
  /** The notice of a planned close (docs/streams.md#planned-closes), in the dialect's words and the connection's framing. */
  closingNotice(close: PlannedClose, now: number, options: DialectOptions): string;
  /** What its connections are told shortly before an announced maintenance starts (null: nothing), in the connection's framing. */
  maintenanceNotice(now: number, options: DialectOptions): string | null;
}

const dialects = new Map<string, StreamDialect>();

/**
 * Makes a dialect known to the shards (once, as the worker's module loads).
 *
 * @example
 * registerDialect(binanceDialect);
 */
export function registerDialect(dialect: StreamDialect): void {
  dialects.set(dialect.id, dialect);
}

export function dialectOf(id: string | null | undefined): StreamDialect | undefined {
  return id ? dialects.get(id) : undefined;
}

/** The names of `DIALECT_STREAMS_HEADER`; a name that does not decode is dropped. */
export function decodeNames(header: string | null, most: number): string[] {
  return (header ?? "")
    .split(",", most + 1)
    .filter((name) => name !== "")
    .flatMap((name) => {
      try {
        return [decodeURIComponent(name)];
      } catch {
        return [];
      }
    });
}

export function encodeNames(names: readonly string[]): string {
  return names.map(encodeURIComponent).join(",");
}

/** The options of `DIALECT_OPTIONS_HEADER`: flags and short values only. */
export function decodeOptions(header: string | null): DialectOptions {
  try {
    const value: unknown = JSON.parse(header ?? "{}");
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(
      Object.entries(value).filter(([, v]) => typeof v === "boolean" || typeof v === "number" || (typeof v === "string" && v.length <= 64)),
    ) as DialectOptions;
  } catch {
    return {};
  }
}
