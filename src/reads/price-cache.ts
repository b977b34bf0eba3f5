import type { PriceSnapshot } from "../market/price-index";
import { PRICE_SNAPSHOT_KEY } from "../market/price-index-object";
import { billed } from "../metrics/billed-bindings";

/** The index writes at most once a second, so a younger copy in this isolate, or in its location, is as fresh. */
const COPY_MS = 1_000;
/** The location's copy, through the Cache API: every isolate of a location shares one KV read a second. */
const LOCATION_COPY_URL = "https://prices.market-data.internal/snapshot";
const READ_AT_HEADER = "X-Read-At";

let cached: { snapshot: Promise<PriceSnapshot | null>; fetchedAt: number } | undefined;

/**
 * The price snapshot from KV, read at most once a second per location: this isolate's copy, else
 * the location's (the Cache API), else KV — and one read in flight per isolate, however many
 * requests ask at once. KV bills each read ($0.50 a million): once a second per isolate was about
 * $1,000–2,000 a month at a venue's thousand isolates; once a second per location is a tenth of
 * that (docs/capacity.md#the-whole-bill). KV is eventually consistent across locations (up to
 * ~60 s); `asOf` tells the reader how old it is.
 */
export function readPriceSnapshot(env: Env, now = Date.now()): Promise<PriceSnapshot | null> {
  if (cached && now - cached.fetchedAt < COPY_MS) return cached.snapshot;
  const snapshot = locationCopy(env, now);
  const entry = { snapshot, fetchedAt: now };
  cached = entry;
  // A failed read is not kept: the next request asks again.
  snapshot.catch(() => {
    if (cached === entry) cached = undefined;
  });
  return snapshot;
}

/** Forgets this isolate's copy, as another isolate of the location starts without one (the tests). */
export function forgetIsolatePriceCopy(): void {
  cached = undefined;
}

async function locationCopy(env: Env, now: number): Promise<PriceSnapshot | null> {
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  const hit = await cache?.match(LOCATION_COPY_URL).catch(() => undefined);
  if (hit && now - Number(hit.headers.get(READ_AT_HEADER)) < COPY_MS) return (await hit.json()) as PriceSnapshot | null;
  const snapshot = await billed(env, "PRICES").get<PriceSnapshot>(PRICE_SNAPSHOT_KEY, "json");
  const copy = new Response(JSON.stringify(snapshot), {
    headers: { "Content-Type": "application/json", "Cache-Control": "max-age=5", [READ_AT_HEADER]: String(now) },
  });
  // The location's copy is an optimisation: a failed put only means the next isolate reads KV.
  await cache?.put(LOCATION_COPY_URL, copy).catch(() => undefined);
  return snapshot;
}
