import { fromBase64Url, toBase64Url } from "../core/encoding";
import { problem } from "../core/problem";

/**
 * The operator audit log (docs/operations.md#audit-log), in D1 (migrations/0001_schema.sql). A record is a
 * statement added to the batch that makes the change, so the change and its record commit
 * together or not at all.
 */
interface AuditEntry {
  at: number;
  /** The operator credential's id (`admin:` and a digest prefix), never the token. */
  operator: string;
  /** Method and route pattern, e.g. `PUT /admin/markets/:pair/status`. */
  route: string;
  /** What kind of change, e.g. `market.status`, `publishKey.create`. */
  action: string;
  /** What it changed: a symbol, an asset, a key or gateway id. */
  target: string;
  /** The change itself, never a secret. */
  change: unknown;
}

/** Who and where, from the request; the store adds what changed. */
export type AuditContext = Pick<AuditEntry, "at" | "operator" | "route">;

/** A change record bounded in bytes: a listing of 500 markets is summarised, not copied whole. */
const MAX_CHANGE_BYTES = 16 * 1024;

function changeText(change: unknown): string {
  const text = JSON.stringify(change);
  return text.length <= MAX_CHANGE_BYTES ? text : JSON.stringify({ truncated: true, bytes: text.length, head: text.slice(0, MAX_CHANGE_BYTES) });
}

/**
 * The statement that records `entry`. With `onlyIfChanged`, it records only when the statement
 * just before it in the batch changed a row (`changes()`), so a conditional update that matched
 * nothing leaves no record either.
 */
export function auditStatement(
  db: D1Database,
  context: AuditContext,
  action: string,
  target: string,
  change: unknown,
  onlyIfChanged = false,
): D1PreparedStatement {
  const sql = `INSERT INTO audit_log (at, operator, route, action, target, change) SELECT ?, ?, ?, ?, ?, ?${onlyIfChanged ? " WHERE changes() > 0" : ""}`;
  return db.prepare(sql).bind(context.at, context.operator, context.route, action, target, changeText(change));
}

export interface AuditRecord extends AuditEntry {
  id: number;
}

type Row = { id: number; at: number; operator: string; route: string; action: string; target: string; change: string };

function encodeCursor(id: number): string {
  return toBase64Url(new TextEncoder().encode(JSON.stringify([id])));
}

function decodeCursor(cursor: string): number {
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(fromBase64Url(cursor))) as unknown;
    if (Array.isArray(value) && Number.isSafeInteger(value[0]) && value[0] > 0) return value[0] as number;
  } catch {
    // falls through to the 400
  }
  throw problem("VALIDATION_FAILED", "the cursor is not one this API gave out", { errors: [{ path: "query.cursor", message: "unknown cursor" }] });
}

/** Records at or after `since` (Unix ms), oldest first, `limit` a page; `nextCursor` continues. */
export async function readAudit(
  db: D1Database,
  query: { since?: number; limit: number; cursor?: string },
): Promise<{ data: AuditRecord[]; nextCursor: string | null }> {
  const after = query.cursor ? decodeCursor(query.cursor) : 0;
  const { results } = await db
    .prepare("SELECT * FROM audit_log WHERE at >= ? AND id > ? ORDER BY id LIMIT ?")
    .bind(query.since ?? 0, after, query.limit + 1)
    .all<Row>();
  const page = results.slice(0, query.limit);
  return {
    data: page.map((row) => ({ ...row, change: JSON.parse(row.change) as unknown })),
    nextCursor: results.length > query.limit ? encodeCursor(page[page.length - 1]!.id) : null,
  };
}
