import type { Copy } from "./edge-copies";

/**
 * The location's shared copies, through the Cache API: what one isolate brought, the location's
 * other isolates read instead of asking again (the market answers of `edge-reads.ts`, the price
 * snapshot of `price-cache.ts`). Each copy says when it was brought (`fetchedAt`); its reader judges
 * freshness by that, the Cache API's own age only keeps it for `keepMs`. Absent where there is no
 * Cache API; a failure reads as no copy (the tier is an optimisation: the source is asked instead).
 *
 * @example
 * const shared = await sharedCopy(key);
 * if (!shared || now - shared.fetchedAt >= maxAgeMs) await shareCopy(key, await bring(), staleIfErrorMs);
 */

const SHARED_ORIGIN = "https://edge-copies.market-data.internal/";

export async function sharedCopy(key: string): Promise<Copy | undefined> {
  if (typeof caches === "undefined") return undefined;
  try {
    const hit = await caches.default.match(SHARED_ORIGIN + encodeURIComponent(key));
    return hit ? ((await hit.json()) as Copy) : undefined;
  } catch {
    return undefined;
  }
}

export function shareCopy(key: string, copy: Copy, keepMs: number): Promise<unknown> {
  if (typeof caches === "undefined") return Promise.resolve();
  const seconds = Math.max(1, Math.ceil(keepMs / 1000));
  const response = new Response(JSON.stringify(copy), { headers: { "Content-Type": "application/json", "Cache-Control": `max-age=${seconds}` } });
  return caches.default.put(SHARED_ORIGIN + encodeURIComponent(key), response).catch(() => undefined);
}
