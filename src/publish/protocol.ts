import { z } from "@hono/zod-openapi";
import { type ProblemCode, type ProblemExtras, problemBody } from "../core/problem";
import { fieldErrors } from "../core/router";
import { type IngestBody, IngestBodySchema } from "../market/schemas";

/**
 * The publisher channel's protocol (docs/publishing.md#the-publisher-channel), pure: a message is
 * an ingest batch with the client's `id`, answered `{id, result}` or `{id, error}` with the
 * semantics of `POST /v1/ingest`.
 */

/** Batches a connection may have sent and not yet had answered; one more is refused, never dropped. */
export const MAX_UNACKED = 64;
/** A message is at most this many bytes (the runtime's WebSocket message limit). */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** Open publisher connections per publishing key (docs/limits.md#publishing). */
export const MAX_CHANNELS_PER_KEY = 4;
/** Batches, and their bytes, awaiting an answer over all of one key's connections: what a key can make its channel hold. */
export const MAX_UNACKED_PER_KEY = MAX_CHANNELS_PER_KEY * MAX_UNACKED;
export const MAX_PENDING_BYTES_PER_KEY = 16 * 1024 * 1024;

export type BatchId = string | number;

export const PublishMessageSchema = IngestBodySchema.extend({
  id: z.union([z.string().min(1).max(64), z.number().int()]).openapi({ description: "The client's id of the batch, echoed in its answer" }),
});

export type Parsed = { ok: true; id: BatchId; body: IngestBody } | { ok: false; id: BatchId | null; error: ReturnType<typeof problemBody> };

/** The `id` of a message that failed to parse, if it has a usable one. */
function idOf(value: unknown): BatchId | null {
  const id = (value as { id?: unknown } | null)?.id;
  return (typeof id === "string" && id.length > 0 && id.length <= 64) || (typeof id === "number" && Number.isInteger(id)) ? id : null;
}

export function errorOf(code: ProblemCode, detail: string, extras?: ProblemExtras): ReturnType<typeof problemBody> {
  return problemBody(code, detail, undefined, extras);
}

/** Parses one message: a batch with its id, or the error to answer (with the id when it has one). */
export function parseBatch(message: string | ArrayBuffer): Parsed {
  if (typeof message !== "string") return { ok: false, id: null, error: errorOf("VALIDATION_FAILED", "batches are JSON text, not binary") };
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return { ok: false, id: null, error: errorOf("VALIDATION_FAILED", "a batch is JSON: {id, symbol, book?, trades?}") };
  }
  const parsed = PublishMessageSchema.safeParse(value);
  if (!parsed.success) {
    return {
      ok: false,
      id: idOf(value),
      error: errorOf("VALIDATION_FAILED", "the batch does not match {id, symbol, book?, trades?}", { errors: fieldErrors(parsed.error.issues) }),
    };
  }
  const { id, ...body } = parsed.data;
  return { ok: true, id, body };
}
