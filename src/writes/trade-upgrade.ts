import { type MarketStorage, scopeOf } from "./market-storage";
import type { TradeBlocks } from "./trade-blocks";
import type { TradeIdMinutes } from "./trade-id-minutes";
import type { StoredTrade } from "./trades";

function toTrade(row: Record<string, SqlStorageValue>): StoredTrade {
  return {
    id: row.id as string,
    seq: row.seq as number,
    price: BigInt(row.price as string),
    quantity: BigInt(row.quantity as string),
    side: row.side as "buy" | "sell",
    time: row.time as number,
  };
}

/**
 * Markets from before the blocks kept a row per trade in a `trades` table: moved into blocks of
 * 1,000 and their ids remembered, once; `trades` is then a view of the blocks (for an operator's
 * look inside, never written).
 */
export function upgradeTrades(storage: MarketStorage, blocks: TradeBlocks, tradeIds: TradeIdMinutes): void {
  const { sql } = storage;
  // A market in a host began there, after the blocks: nothing to move, and its view carries its prefix.
  const scope = scopeOf(sql);
  const table = scope === "" ? sql.exec<{ type: string }>("SELECT type FROM sqlite_master WHERE name = 'trades'").toArray()[0] : undefined;
  if (table?.type === "table") {
    storage.transactionSync(() => {
      const rows = sql.exec("SELECT * FROM trades ORDER BY seq").toArray().map(toTrade);
      for (let i = 0; i < rows.length; i += 1000) blocks.writeBlock(rows.slice(i, i + 1000));
      tradeIds.remember(rows);
      tradeIds.write(Date.now());
      sql.exec("DROP TABLE trades");
    });
  }
  if (table?.type !== "view") {
    sql.exec(`CREATE VIEW IF NOT EXISTS ${scope}trades AS
      SELECT t.value ->> 0 AS id, t.value ->> 1 AS seq, t.value ->> 2 AS price, t.value ->> 3 AS quantity,
        CASE t.value ->> 4 WHEN 1 THEN 'buy' ELSE 'sell' END AS side, t.value ->> 5 AS time
      FROM trade_blocks, json_each(trade_blocks.trades) AS t`);
  }
}
