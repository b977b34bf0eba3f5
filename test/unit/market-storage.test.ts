import { describe, expect, it } from "vitest";
import { scopeQuery } from "../../src/writes/market-storage";

describe("a hosted market's SQL names its own tables (src/writes/market-storage.ts)", () => {
  it("renames the market's tables and indexes wherever they stand as tables, and nothing else", () => {
    const cases: [string, string][] = [
      ["SELECT value FROM meta WHERE key = 'rollups'", "SELECT value FROM m_X_meta WHERE key = 'rollups'"],
      ["INSERT INTO trade_blocks (first_seq, trades) VALUES (?, ?)", "INSERT INTO m_X_trade_blocks (first_seq, trades) VALUES (?, ?)"],
      [
        "CREATE INDEX IF NOT EXISTS archive_chunks_by_time ON archive_chunks (max_time)",
        "CREATE INDEX IF NOT EXISTS m_X_archive_chunks_by_time ON m_X_archive_chunks (max_time)",
      ],
      // A qualified column keeps its name; its table is renamed.
      [
        "SELECT t.value FROM trade_blocks, json_each(trade_blocks.trades) AS t",
        "SELECT t.value FROM m_X_trade_blocks, json_each(m_X_trade_blocks.trades) AS t",
      ],
      ["SELECT ids FROM trade_ids_493821 WHERE minute = ?", "SELECT ids FROM m_X_trade_ids_493821 WHERE minute = ?"],
      ["DELETE FROM trade_ids_hot WHERE max_seq <= ?", "DELETE FROM m_X_trade_ids_hot WHERE max_seq <= ?"],
      ["PRAGMA table_info(minute_buckets)", "PRAGMA table_info(m_X_minute_buckets)"],
      // Words that only contain a table's name, columns and the group's own tables are left alone.
      ["SELECT metadata, book_logs, n FROM journal WHERE minute_buckets_x = 1", "SELECT metadata, book_logs, n FROM journal WHERE minute_buckets_x = 1"],
      ["SELECT name FROM sqlite_master WHERE type = 'table'", "SELECT name FROM sqlite_master WHERE type = 'table'"],
    ];
    for (const [query, scoped] of cases) expect(scopeQuery(query, "m_X_"), query).toBe(scoped);
  });
});
