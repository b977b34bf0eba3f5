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
  /** The Worker's own requests and CPU (Workers Standard), and what the whole bill adds (docs/capacity.md#the-whole-bill). */
  workersRequests: { perMillion: 0.3, includedPerMonth: 10e6 },
  workersCpuMs: { perMillion: 0.02, includedPerMonth: 30e6 },
  kvReads: { perMillion: 0.5, includedPerMonth: 10e6 },
  r2ClassB: { perMillion: 0.36, includedPerMonth: 10e6 },
  /** D1 (the closed segments' index): rows written and read, with what a month includes. */
  d1RowsWritten: { perMillion: 1.0, includedPerMonth: 50e6 },
  r2ClassBInfrequent: { perMillion: 0.9 },
  /** Infrequent Access: each GB retrieved. */
  r2RetrievalInfrequent: { perGb: 0.01 },
  analyticsPoints: { perMillion: 0.25, includedPerMonth: 10e6 },
  workersLogs: { perMillion: 0.6, includedPerMonth: 20e6 },
};

/** A month as the prices count it: 30 days. */
export const SECONDS_PER_MONTH = 30 * 86_400;

/** Dollars a month for `perSecond` units at `price` (per million, beyond what is included a month). */
export const dollars = (perSecond, { perMillion, includedPerMonth = 0 }) => (Math.max(0, perSecond * SECONDS_PER_MONTH - includedPerMonth) * perMillion) / 1e6;
