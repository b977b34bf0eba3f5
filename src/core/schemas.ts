import { z } from "@hono/zod-openapi";
import { DECIMAL_PATTERN } from "./decimal";
import { PROBLEM_CODES } from "./problem";

/** The longest decimal string taken (DecimalString). */
export const MAX_DECIMAL_CHARS = 80;
/** The latest Unix time in milliseconds taken (TimestampMs): JavaScript's last date. */
export const MAX_TIMESTAMP_MS = 8_640_000_000_000_000;

/** A decimal as a JSON string in plain notation (docs/api.md). */
export const DecimalString = z
  .string()
  .max(MAX_DECIMAL_CHARS)
  .regex(DECIMAL_PATTERN, 'must be a decimal string in plain notation, e.g. "97000.10"')
  .openapi({ example: "97000.10", description: "Decimal as a string, plain notation, exact" });

/** A Unix time in milliseconds. */
export const TimestampMs = z.number().int().nonnegative().max(MAX_TIMESTAMP_MS).openapi({ example: 1763800000000, description: "Unix time in milliseconds" });

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "/docs/errors#unknown-symbol" }),
    title: z.string().openapi({ example: "Unknown Symbol" }),
    status: z.number().int().openapi({ example: 404 }),
    code: z.enum(Object.keys(PROBLEM_CODES) as [keyof typeof PROBLEM_CODES, ...(keyof typeof PROBLEM_CODES)[]]),
    detail: z.string(),
    requestId: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .passthrough()
  .openapi("Problem", { description: "RFC 9457 problem details (docs/api.md#errors)" });

/** OpenAPI request entry: a required JSON body of `schema` (validated before the handler runs). */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { body: { required: true, content: { "application/json": { schema } } } };
}

/** OpenAPI response entry: 200 with a JSON body of `schema`. */
export function okJson<T extends z.ZodType>(schema: T, description: string) {
  return { 200: { description, content: { "application/json": { schema } } } };
}

/** OpenAPI response entry: 201 with a JSON body of `schema`. */
export function createdJson<T extends z.ZodType>(schema: T, description: string) {
  return { 201: { description, content: { "application/json": { schema } } } };
}

/**
 * OpenAPI response entries for problem+json answers with the given statuses; `withSharedAnswers`
 * (core/openapi.ts) writes each one's problem codes for its path.
 */
export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, { description: "Problem", content: { "application/problem+json": { schema: ProblemSchema } } }]));
}

/** Query integers arrive as text; this accepts only plain base-10 integers in range. */
function wholeNumber(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,16}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** An optional integer query parameter; its bounds are in the OpenAPI document, as enforced. */
export function queryInt(min: number, max: number) {
  return wholeNumber(min, max).optional().openapi({ type: "integer", minimum: min, maximum: max });
}

/** The same with a default, which the document states too. */
export function queryIntOr(min: number, max: number, fallback: number) {
  return wholeNumber(min, max)
    .optional()
    .transform((value): number => value ?? fallback)
    .openapi({ type: "integer", minimum: min, maximum: max, default: fallback });
}
