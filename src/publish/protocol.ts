import { z } from "@hono/zod-openapi";
import { type ProblemCode, type ProblemExtras, problemBody } from "../core/problem";
import { fieldErrors } from "../http/router";
import { type IngestBody, IngestBodySchema, MAX_ID_CHARS } from "../market/schemas";
import { quickBatch } from "./quick-batch";

/**
 * The publisher channel's protocol (docs/publishing.md#the-publisher-channel), pure: a message is
 * an ingest batch with the client's `id`, or an array of up to MAX_BATCHES_PER_MESSAGE of them
 * (taken in order, as if sent one by one), each answered `{id, result}` or `{id, error}` with the
 * semantics of `POST /v1/ingest`.
 */

/**
 * Batches a connection may have sent and not yet had answered; one more is refused, never dropped.
 * Sized by rate × the wait for the tick: a venue's 20,000 batches a second, each answered once its
 * tick is written (p50 about 60 ms, p99 about 150 ms), keep about 1,200–3,000 in flight on the one
 * connection that carries them (docs/publishing.md#flow-control). What it holds is bounded in
 * bytes by the key's MAX_PENDING_BYTES_PER_KEY.
 */
export const MAX_UNACKED = 4_096;
/** A message is at most this many bytes (the runtime's WebSocket message limit). */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** Open publisher connections per publishing key (docs/limits.md#publishing). */
export const MAX_CHANNELS_PER_KEY = 4;
/** Batches, and their bytes, awaiting an answer over all of one key's connections: what a key can make its channel hold. */
export const MAX_UNACKED_PER_KEY = MAX_CHANNELS_PER_KEY * MAX_UNACKED;
export const MAX_PENDING_BYTES_PER_KEY = 16 * 1024 * 1024;

/**
 * Batches one message may carry (an array; the message itself at most MAX_BATCH_BYTES). Cloudflare
 * bills 20 incoming messages as one request, whatever they hold, so a venue's publisher sending
 * its markets' batches of a moment together pays per message, not per batch.
 */
export const MAX_BATCHES_PER_MESSAGE = 1_024;

export type BatchId = string | number;

export const PublishMessageSchema = IngestBodySchema.extend({
  id: z.union([z.string().min(1).max(MAX_ID_CHARS), z.number().int()]).openapi({ description: "The client's id of the batch, echoed in its answer" }),
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

/**
 * Parses one message: its batches in order, each with its id or the error to answer it with (with
 * the id when it has one). A message that is no batch at all is one error without an id.
 */
export function parseMessage(message: string | ArrayBuffer): Parsed[] {
  if (typeof message !== "string") return [{ ok: false, id: null, error: errorOf("VALIDATION_FAILED", "batches are JSON text, not binary") }];
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return [{ ok: false, id: null, error: errorOf("VALIDATION_FAILED", "a message is JSON: a batch {id, symbol, book?, trades?} or an array of them") }];
  }
  if (!Array.isArray(value)) return [parseBatch(value)];
  if (value.length === 0 || value.length > MAX_BATCHES_PER_MESSAGE) {
    return [{ ok: false, id: null, error: errorOf("VALIDATION_FAILED", `an array of batches holds 1 to ${MAX_BATCHES_PER_MESSAGE} of them`) }];
  }
  return value.map(parseBatch);
}

/** One batch of a message: its body and id, or the error to answer (with the id when it has one). */
function parseBatch(value: unknown): Parsed {
  const quick = quickBatch(value);
  if (quick) {
    const { id, ...body } = quick;
    return { ok: true, id, body };
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
