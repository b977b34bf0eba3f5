/**
 * How a request or a batch ended, in the metrics' labels (docs/operations.md#metrics), pure.
 */
import type { IngestResult } from "../market/ingest";

/** A batch that changed nothing (every trade seen, the book update a resend) is a duplicate. */
export function batchOutcome(result: IngestResult): "applied" | "duplicate" {
  return result.acceptedTrades === 0 && result.book !== "applied" ? "duplicate" : "applied";
}

/** A settlement callback by its answer: 200 accepted (applied, duplicate or stale), 202 held or quarantined. */
export function callbackOutcome(status: number): "accepted" | "held" | "refused" | "error" {
  if (status === 200) return "accepted";
  if (status === 202) return "held";
  return status >= 500 ? "error" : "refused";
}

/** Which limit a 429 is: the stream connection limit, the publisher's, a key's, or an address's. */
export function limitScope(path: string, code: string | undefined): "public" | "signed" | "publish" | "stream" {
  if (code === "STREAM_LIMIT") return "stream";
  if (path === "/v1/publish" || path === "/v1/ingest") return "publish";
  return path.startsWith("/v1/") ? "signed" : "public";
}
