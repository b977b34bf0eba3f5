import type { PriceSnapshot } from "../market/price-index";
import { PRICE_SNAPSHOT_KEY } from "../market/price-index-object";
import { billed } from "../metrics/billed-bindings";
import { shareCopy, sharedCopy } from "./location-copies";

/** The index writes at most once a second, so a younger copy in this isolate, or in its location, is as fresh. */
const COPY_MS = 1_000;
/** The location's copy (`location-copies.ts`): every isolate of a location shares one KV read a second. */
const LOCATION_COPY_KEY = "!prices";
/** How long the location keeps it: its freshness is judged by when it was read, not by this. */
const LOCATION_KEEP_MS = 5_000;

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
  const shared = await sharedCopy(LOCATION_COPY_KEY);
  if (shared && now - shared.fetchedAt < COPY_MS) return JSON.parse(shared.text) as PriceSnapshot | null;
  const text = (await billed(env, "PRICES").get(PRICE_SNAPSHOT_KEY, "text")) ?? "null";
  const snapshot = JSON.parse(text) as PriceSnapshot | null;
  await shareCopy(LOCATION_COPY_KEY, { text, at: snapshot?.asOf ?? now, version: 0, fetchedAt: now }, LOCATION_KEEP_MS);
  return snapshot;
}
