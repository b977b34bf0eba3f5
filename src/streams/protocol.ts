import { findMarket, QUOTE_ASSETS } from "../market/registry";

/**
 * The WebSocket protocol of contract section 6, pure: stream names, client messages and the
 * inbound limits. The StreamHub applies what this decides.
 */
export const MAX_STREAMS_PER_CONNECTION = 50;
export const MAX_MESSAGE_BYTES = 4096;
export const MAX_MESSAGES_PER_SECOND = 10;
/** Non-JSON or malformed messages tolerated (each answered with an error) before closing. */
export const MAX_WARNINGS = 3;
export const MAX_CONNECTIONS_PER_PRINCIPAL = 5;
export const POLICY_VIOLATION = 1008;

export type StreamKind = "ticker" | "trades" | "book" | "prices";

export interface StreamName {
  name: string;
  kind: StreamKind;
  /** A market symbol, or a quote asset for `prices`. */
  subject: string;
}

/** `ticker.BTCUSDT`, `trades.BTCUSDT`, `book.BTCUSDT`, `prices.USDT` (subject in any case). */
export function parseStreamName(raw: unknown): StreamName | null {
  if (typeof raw !== "string" || raw.length > 64) return null;
  const dot = raw.indexOf(".");
  if (dot <= 0) return null;
  const kind = raw.slice(0, dot);
  const subject = raw.slice(dot + 1).toUpperCase();
  if (kind === "prices") return QUOTE_ASSETS.includes(subject) ? { name: `prices.${subject}`, kind, subject } : null;
  if (kind !== "ticker" && kind !== "trades" && kind !== "book") return null;
  return findMarket(subject) ? { name: `${kind}.${subject}`, kind, subject } : null;
}

export type ClientMessage =
  | { op: "subscribe" | "unsubscribe"; id: number | string | null; streams: unknown[] }
  | { op: "list"; id: number | string | null }
  | { op: "ping"; id: number | string | null };

export type ParseResult = { ok: true; message: ClientMessage } | { ok: false; code: "INVALID_MESSAGE" | "UNKNOWN_OP"; message: string; id: number | string | null };

function idOf(value: Record<string, unknown>): number | string | null {
  const id = value.id;
  return typeof id === "number" || (typeof id === "string" && id.length <= 64) ? id : null;
}

export function parseClientMessage(text: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: "INVALID_MESSAGE", message: "messages are JSON text", id: null };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, code: "INVALID_MESSAGE", message: "a message is a JSON object with op", id: null };
  const record = value as Record<string, unknown>;
  const id = idOf(record);
  switch (record.op) {
    case "subscribe":
    case "unsubscribe":
      if (!Array.isArray(record.streams)) return { ok: false, code: "INVALID_MESSAGE", message: `${record.op} needs streams: [...]`, id };
      return { ok: true, message: { op: record.op, id, streams: record.streams } };
    case "list":
    case "ping":
      return { ok: true, message: { op: record.op, id } };
    default:
      return { ok: false, code: "UNKNOWN_OP", message: "op is one of subscribe, unsubscribe, list, ping", id };
  }
}

/** The shard that holds every connection of a principal (FNV-1a of its name). */
export function shardOf(principal: string, shards: number): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < principal.length; i++) {
    hash ^= principal.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return `shard-${(hash >>> 0) % Math.max(1, shards)}`;
}
