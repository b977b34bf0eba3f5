import { env } from "cloudflare:workers";
import { ProblemError } from "../../src/core/problem";
import { ingest } from "../../src/market/ingest";
import type { IngestBody } from "../../src/market/schemas";

// BTCUSDT, ETHUSDT, SOLUSDT and XRPUSDT are all in group 0: one host, one tick, one journal.
const T0 = Date.now();
const PRICES: Record<string, number> = { BTCUSDT: 60_000, ETHUSDT: 3_000, SOLUSDT: 150, XRPUSDT: 1 };
const SCALES: Record<string, [number, number]> = { BTCUSDT: [2, 5], ETHUSDT: [2, 4], SOLUSDT: [3, 2], XRPUSDT: [4, 1] };

/** Batch `sequence` of a market: the snapshot at 1, then a delta of one level each side and one trade. */
export function batch(symbol: string, sequence: number): IngestBody {
  const [p, q] = SCALES[symbol]!;
  const at = (units: number, scale: number) => (units / 10 ** scale).toFixed(scale);
  const price = PRICES[symbol]! * 10 ** p;
  const bids: [string, string][] = [[at(price - 1, p), at(10 + sequence, q)]];
  const asks: [string, string][] = [[at(price + 1, p), at(20 + sequence, q)]];
  return {
    symbol,
    book: { type: sequence === 1 ? "snapshot" : "delta", sequence, bids, asks },
    trades: sequence === 1 ? [] : [{ id: `iso-${symbol}-${sequence}`, price: at(price, p), quantity: at(1, q), side: "buy", time: T0 + sequence }],
  };
}

/** The answer to one batch: its result, or the problem's code. */
export async function send(symbol: string, sequence: number): Promise<string> {
  try {
    const answer = await ingest(env, "*", batch(symbol, sequence));
    return answer.book ?? "no book";
  } catch (error) {
    if (error instanceof ProblemError) return error.code;
    throw error;
  }
}

/** `batches` batches of `per` trades of `symbol` at `price` × `quantity`, each trade's id `{prefix}-{batch}-{i}` and its time the moment it is sent. */
export async function ingestTrades(
  symbol: string,
  batches: number,
  per: number,
  { prefix, price, quantity, side = "buy" }: { prefix: string; price: string; quantity: string; side?: "buy" | "sell" },
): Promise<void> {
  for (let b = 0; b < batches; b++) {
    const trades = Array.from({ length: per }, (_, i) => ({ id: `${prefix}-${b}-${i}`, price, quantity, side, time: Date.now() }));
    await ingest(env, "*", { symbol, trades });
  }
}
