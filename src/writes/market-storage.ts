import type { LogRing } from "./journal";
import type { OpenSegments } from "./open-segments";

/**
 * What a market's parts need of storage: its SQL, transactions and one alarm. A market hosted in
 * its group's object (docs/design.md#market-hosts) gets a view of the group's storage in which its
 * tables carry its own prefix and its alarm is one of the group's; the stores never know.
 */
export interface MarketStorage {
  readonly sql: SqlStorage;
  /** Where its book log's rows go: its group's journal when hosted (`./journal.ts`), else its own table. */
  readonly ring?: LogRing;
  /** Its host's open book segment texts, shared by the group's markets (`./open-segments.ts`); else its own. */
  readonly openSegments?: OpenSegments;
  transactionSync<T>(work: () => T): T;
  getAlarm(): Promise<number | null>;
  setAlarm(time: number): Promise<void>;
}

/**
 * The tables (and indexes) a market keeps: the names a host prefixes. A name is a table where it
 * stands alone, never after a `.` (a column of a qualified table) or inside another word.
 */
const MARKET_TABLES =
  /(?<![.\w])(meta|minute_buckets|rollup_buckets|archive_chunks(?:_by_time)?|second_ring|trade_blocks|book_log|book_snapshot|book_segments(?:_by_time)?|book_segment_text|trade_ids_(?:\d+|hot))(?!\w)/g;

/** Statements rewritten so far, by text: the stores use a few dozen fixed texts (and one per hour table). */
const MAX_CACHED = 1_000;

const scopes = new WeakMap<SqlStorage, string>();

/** The prefix a market's tables carry in `sql` ("" where the object holds one market). */
export function scopeOf(sql: SqlStorage): string {
  return scopes.get(sql) ?? "";
}

/** `query` with each market table named with `prefix` (exported for its unit test). */
export function scopeQuery(query: string, prefix: string): string {
  return query.replace(MARKET_TABLES, (name) => prefix + name);
}

/**
 * The SQL of one market inside a shared database: every statement's market tables are renamed
 * `{prefix}{table}`. Bindings, cursors and the counters they carry are the shared storage's.
 */
export function scopedSql(sql: SqlStorage, prefix: string): SqlStorage {
  const rewritten = new Map<string, string>();
  const scoped = {
    exec(query: string, ...bindings: unknown[]) {
      let text = rewritten.get(query);
      if (text === undefined) {
        if (rewritten.size >= MAX_CACHED) rewritten.clear();
        rewritten.set(query, (text = scopeQuery(query, prefix)));
      }
      return sql.exec(text, ...bindings);
    },
    get databaseSize() {
      return sql.databaseSize;
    },
  } as unknown as SqlStorage;
  scopes.set(scoped, prefix);
  return scoped;
}

/** The prefix of a market's tables in its host: its symbol's (symbols are upper-case letters and digits). */
export const tablePrefixOf = (symbol: string): string => `m_${symbol}_`;
