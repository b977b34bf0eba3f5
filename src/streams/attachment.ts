import { randomId } from "../core/encoding";
import type { CatchUpState } from "./catch-up";
import type { DialectOptions } from "./dialect";

/**
 * What a stream connection carries through hibernation, in its attachment, which the runtime
 * bounds at 16 KiB a socket. Its stream names are packed: each name's part before its first `@`
 * once, in a table, and the names as `index:rest` — a connection holding many streams of a few
 * markets (Binance's 1024) keeps each market's symbol once. Names that still take more than
 * ATTACHED_NAME_BYTES (1,024 long Binance names take about 25 KB) are kept in a row of the shard's
 * own SQLite instead, the attachment naming the row: one row written per change of such a
 * connection's streams, one read per look at them, dropped when it closes.
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

/** The names `packNames` packed (none when the attachment holds none). */
export function unpackNames(text: string | undefined): string[] {
  if (text === undefined) return [];
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

/** The packed names an attachment may hold itself; past it they go to the shard's `socket_names`. */
const ATTACHED_NAME_BYTES = 15 * 1024;

/** Names kept in a row of the shard's storage: the row's id. */
type NamesRow = { row: string };

/** An attachment as the socket keeps it: its streams packed (./attachment.ts), so a few markets' many streams fit, or in a row. */
export type StoredAttachment = Omit<Attachment, "streams"> & { streams: string | NamesRow };

/** The storage of the shard holding each socket whose names may need a row (`adoptSocket`, `restoreNames`). */
const stores = new WeakMap<WebSocket, SqlStorage>();

const isRow = (streams: StoredAttachment["streams"] | undefined): streams is NamesRow => typeof streams === "object" && streams !== null && "row" in streams;

/** Makes `sql` the store of a socket's long names (a socket the shard just accepted). */
export function adoptSocket(sql: SqlStorage, ws: WebSocket): void {
  stores.set(ws, sql);
}

/**
 * A shard starting: `sql` holds the long names of its open `sockets`, and the rows of sockets no
 * longer open go (a crash or a restart closes them without a close event).
 */
export function restoreNames(sql: SqlStorage, sockets: readonly WebSocket[]): void {
  sql.exec("CREATE TABLE IF NOT EXISTS socket_names (id TEXT PRIMARY KEY, names TEXT NOT NULL) WITHOUT ROWID");
  for (const ws of sockets) adoptSocket(sql, ws);
  const open = new Set(sockets.flatMap((ws) => rowsOf(ws)));
  const rows = sql.exec<{ id: string }>("SELECT id FROM socket_names").toArray();
  for (const { id } of rows) if (!open.has(id)) sql.exec("DELETE FROM socket_names WHERE id = ?", id);
}

function rowsOf(ws: WebSocket): string[] {
  const streams = (ws.deserializeAttachment() as StoredAttachment | null)?.streams;
  return isRow(streams) ? [streams.row] : [];
}

/** A socket's attachment with its streams unpacked, or null before it has one. */
export function loadAttachment(ws: WebSocket): Attachment | null {
  const stored = ws.deserializeAttachment() as StoredAttachment | null;
  if (!stored) return null;
  if (!isRow(stored.streams)) return { ...stored, streams: unpackNames(stored.streams) };
  const row = stores.get(ws)?.exec<{ names: string }>("SELECT names FROM socket_names WHERE id = ?", stored.streams.row).toArray()[0];
  return { ...stored, streams: unpackNames(row?.names ?? "") };
}

export function attachmentOf(ws: WebSocket): Attachment {
  return loadAttachment(ws)!;
}

/** What an attachment holds but its streams, read without unpacking them (per frame: the dialect's options). */
export function headerOf(ws: WebSocket): Omit<Attachment, "streams"> {
  return ws.deserializeAttachment() as StoredAttachment;
}

export function saveAttachment(ws: WebSocket, attachment: Attachment): void {
  const packed = packNames(attachment.streams);
  const [row] = rowsOf(ws);
  const sql = stores.get(ws);
  if (packed.length <= ATTACHED_NAME_BYTES || !sql) {
    if (row !== undefined) sql?.exec("DELETE FROM socket_names WHERE id = ?", row);
    ws.serializeAttachment({ ...attachment, streams: packed } satisfies StoredAttachment);
    return;
  }
  const id = row ?? randomId("names", 8);
  sql.exec("INSERT INTO socket_names (id, names) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET names = excluded.names", id, packed);
  ws.serializeAttachment({ ...attachment, streams: { row: id } } satisfies StoredAttachment);
}

/** A socket closed: its names' row, if it had one, goes. */
export function releaseNames(ws: WebSocket): void {
  const [row] = rowsOf(ws);
  if (row !== undefined) stores.get(ws)?.exec("DELETE FROM socket_names WHERE id = ?", row);
}
