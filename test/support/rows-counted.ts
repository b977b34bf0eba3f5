/** An object holding the SQL it runs (a store, a ring, a journal): its `sql` is swapped while counting. */
type HoldsSql = { sql: SqlStorage };

/**
 * Runs `work` with each holder's SQL counted: every statement's cursor is kept, and the rows it
 * wrote and read are summed as the runtime counts them (an index entry a row) once `work` is
 * done. The holders get their own SQL back whatever `work` does.
 *
 * @example
 * const { written } = rowsCounted([candles, ring], () => candles.flush(now));
 */
export function rowsCounted(holders: readonly unknown[], work: () => void): { written: number; read: number } {
  const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  const own = (holders as HoldsSql[]).map((holder) => holder.sql);
  for (const holder of holders as HoldsSql[]) {
    const sql = holder.sql;
    holder.sql = new Proxy(sql, {
      get: (target, prop) =>
        prop === "exec"
          ? (query: string, ...bindings: unknown[]) => {
              const cursor = target.exec(query, ...bindings);
              cursors.push(cursor);
              return cursor;
            }
          : Reflect.get(target, prop, target),
    });
  }
  try {
    work();
  } finally {
    (holders as HoldsSql[]).forEach((holder, i) => {
      holder.sql = own[i]!;
    });
  }
  return { written: cursors.reduce((sum, c) => sum + c.rowsWritten, 0), read: cursors.reduce((sum, c) => sum + c.rowsRead, 0) };
}
