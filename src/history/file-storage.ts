/**
 * How the daily and hourly zips are put in R2 (docs/history.md#storage-class): in the Infrequent
 * Access class. They are written once, kept for ever and downloaded now and then (the edge caches
 * a closed one for a year), so storage at $0.010 a GB-month, not $0.015, is worth a retrieval fee
 * of $0.01 a GB when read and twice the price of a put: at a venue's rate they are ≈ 40 TB a year
 * for a few puts a second. Their `.CHECKSUM` lines stay Standard (a few bytes each); the trade
 * chunks and book segments the API reads, and writes more often, stay Standard too.
 *
 * @example
 * await bucket.put(key, zip, ZIP_PUT);
 */
export const ZIP_PUT = { httpMetadata: { contentType: "application/zip" }, storageClass: "InfrequentAccess" } satisfies R2PutOptions;

/** A file's `.CHECKSUM` beside it, as Binance writes them: `<sha256>  <name>`, Standard class. */
export async function putChecksum(bucket: R2Bucket, key: string, sha256: string): Promise<void> {
  const name = key.slice(key.lastIndexOf("/") + 1);
  await bucket.put(`${key}.CHECKSUM`, `${sha256}  ${name}\n`, { httpMetadata: { contentType: "text/plain; charset=utf-8" } });
}
