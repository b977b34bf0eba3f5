// Cloudflare's published prices, for the benches that turn counts into dollars (cost, from).

/** Cloudflare's published prices (Workers Paid), read 2026-11-25 from developers.cloudflare.com/…/pricing. */
export const PRICES = {
  readAt: "2026-11-25",
  base: { dollarsPerMonth: 5 },
  rowsWritten: { perMillion: 1.0, includedPerMonth: 50e6 },
  rowsRead: { perMillion: 0.001, includedPerMonth: 25e9 },
  /** An RPC session is billed as one request, however many calls it carries. */
  requests: { perMillion: 0.15, includedPerMonth: 1e6 },
  /** Incoming WebSocket messages are billed 20 to a request. */
  messagesPerRequest: 20,
  durationGbSeconds: { perMillion: 12.5, includedPerMonth: 400_000 },
  /** An object is billed for its 128 MB while it is active. */
  objectGb: 0.125,
  sqliteStorage: { perGbMonth: 0.2, includedGb: 5 },
  kvWrites: { perMillion: 5.0, includedPerMonth: 1e6 },
  r2ClassA: { perMillion: 4.5, includedPerMonth: 1e6 },
  r2Storage: { perGbMonth: 0.015, includedGb: 10 },
  /** The Infrequent Access class (the daily and hourly zips): no free tier; a read pays $0.01 a GB more. */
  r2ClassAInfrequent: { perMillion: 9.0 },
  r2StorageInfrequent: { perGbMonth: 0.01 },
};
