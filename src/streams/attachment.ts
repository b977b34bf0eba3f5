import type { CatchUpState } from "./catch-up";
import type { DialectOptions } from "./dialect";

/**
 * What a stream connection carries through hibernation, in its attachment, which the runtime
 * bounds at 16 KiB a socket. Its stream names are packed: each name's part before its first `@`
 * once, in a table, and the names as `index:rest` — a connection holding many streams of a few
 * markets (Binance's 1024) keeps each market's symbol once.
 */

export interface Attachment {
  principal: string;
  /** The streams held: native names, or on a dialect's connection the dialect's names (src/streams/dialect.ts). */
  streams: string[];
  warnings: number;
  /** The connection's lease of its principal's guard, until it is returned (docs/limits.md#stream-connections). */
  lease?: string;
  /** Set on a dialect's connection: its id, and its options (Binance: combined frames or raw). */
  dialect?: { id: string; options: DialectOptions };
  /** A catch-up under way (./catch-up.ts): its streams are not live subscribers yet. */
  catchUp?: CatchUpState;
}

const ENTRIES = "\n";
const ITEMS = "|";
const WHOLE = "#";

/** Packs names, in their order. Names hold neither `|` nor a line break (the protocols' grammars). */
export function packNames(names: readonly string[]): string {
  const prefixes = new Map<string, number>();
  const entries = names.map((name) => {
    const at = name.indexOf("@");
    if (at <= 0) return WHOLE + name;
    const prefix = name.slice(0, at);
    let index = prefixes.get(prefix);
    if (index === undefined) prefixes.set(prefix, (index = prefixes.size));
    return `${index}:${name.slice(at + 1)}`;
  });
  return [...prefixes.keys()].join(ITEMS) + ENTRIES + entries.join(ITEMS);
}

/** The names `packNames` packed; an attachment from before packing holds them as an array. */
export function unpackNames(packed: string | readonly string[] | undefined): string[] {
  if (packed === undefined) return [];
  if (Array.isArray(packed)) return [...packed];
  const text = packed as string;
  const split = text.indexOf(ENTRIES);
  const prefixes = text.slice(0, split).split(ITEMS);
  const body = text.slice(split + 1);
  if (body === "") return [];
  return body.split(ITEMS).map((entry) => {
    if (entry.startsWith(WHOLE)) return entry.slice(1);
    const colon = entry.indexOf(":");
    return `${prefixes[Number(entry.slice(0, colon))]}@${entry.slice(colon + 1)}`;
  });
}

/** An attachment as the socket keeps it: its streams packed (./attachment.ts), so a few markets' many streams fit. */
export type StoredAttachment = Omit<Attachment, "streams"> & { streams: string | string[] };

/** A socket's attachment with its streams unpacked, or null before it has one. */
export function loadAttachment(ws: WebSocket): Attachment | null {
  const stored = ws.deserializeAttachment() as StoredAttachment | null;
  return stored ? { ...stored, streams: unpackNames(stored.streams) } : null;
}

export function attachmentOf(ws: WebSocket): Attachment {
  return loadAttachment(ws)!;
}

/** What an attachment holds but its streams, read without unpacking them (per frame: the dialect's options). */
export function headerOf(ws: WebSocket): Omit<Attachment, "streams"> {
  return ws.deserializeAttachment() as StoredAttachment;
}

export function saveAttachment(ws: WebSocket, attachment: Attachment): void {
  ws.serializeAttachment({ ...attachment, streams: packNames(attachment.streams) } satisfies StoredAttachment);
}
