import type { PriceSnapshot } from "../market/price-index";
import { PRICE_SNAPSHOT_KEY } from "../market/price-index-object";

/** The index writes at most once a second, so a younger copy in this isolate is as fresh. */
const ISOLATE_CACHE_MS = 1_000;

let cached: { snapshot: PriceSnapshot | null; fetchedAt: number } | undefined;

/**
 * The price snapshot from KV, read at most once a second per isolate. KV is eventually
 * consistent across locations (up to ~60 s); `asOf` tells the reader how old it is.
 */
export async function readPriceSnapshot(env: Env, now = Date.now()): Promise<PriceSnapshot | null> {
  if (cached && now - cached.fetchedAt < ISOLATE_CACHE_MS) return cached.snapshot;
  const snapshot = await env.PRICES.get<PriceSnapshot>(PRICE_SNAPSHOT_KEY, "json");
  cached = { snapshot, fetchedAt: now };
  return snapshot;
}
