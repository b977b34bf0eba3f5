import { formatUnits } from "../core/decimal";
import type { MarketConfig } from "./market-config";
import type { StoredTrade } from "./trades";

export interface WireTrade {
  /** Per market, rising by 1 in the order the market applied its trades. */
  tradeId: number;
  id: string;
  price: string;
  quantity: string;
  side: "buy" | "sell";
  time: number;
}

/** A stored trade as clients see it (REST and the trades stream alike). */
export function wireTrade(market: MarketConfig, t: StoredTrade): WireTrade {
  return {
    tradeId: t.seq,
    id: t.id,
    price: formatUnits(t.price, market.priceScale),
    quantity: formatUnits(t.quantity, market.quantityScale),
    side: t.side,
    time: t.time,
  };
}
