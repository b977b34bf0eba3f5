/**
 * Problem details (RFC 9457) with the documented error codes (section 8).
 *
 * Every failure in the service is a {@link ProblemError}; one `onError` turns it into
 * `application/problem+json`, so no handler formats errors itself.
 */
export const PROBLEM_CODES = {
  VALIDATION_FAILED: { status: 400, title: "Bad Request" },
  INVALID_SYMBOL: { status: 400, title: "Invalid Symbol" },
  UNKNOWN_SYMBOL: { status: 404, title: "Unknown Symbol" },
  NOT_FOUND: { status: 404, title: "Not Found" },
  METHOD_NOT_ALLOWED: { status: 405, title: "Method Not Allowed" },
  MISSING_CREDENTIALS: { status: 401, title: "Missing Credentials" },
  MALFORMED_CREDENTIALS: { status: 401, title: "Malformed Credentials" },
  INVALID_API_KEY: { status: 401, title: "Invalid API Key" },
  INVALID_SIGNATURE: { status: 401, title: "Invalid Signature" },
  TIMESTAMP_OUT_OF_WINDOW: { status: 401, title: "Timestamp Out Of Window" },
  PERMISSION_DENIED: { status: 403, title: "Permission Denied" },
  IP_NOT_ALLOWED: { status: 403, title: "IP Not Allowed" },
  FORBIDDEN_MARKET: { status: 403, title: "Forbidden Market" },
  UNAUTHENTICATED: { status: 401, title: "Unauthenticated" },
  UNKNOWN_GATEWAY: { status: 401, title: "Unknown Gateway" },
  EVENT_ID_CONFLICT: { status: 409, title: "Event Id Conflict" },
  SEQUENCE_GAP: { status: 409, title: "Sequence Gap" },
  STALE_SEQUENCE: { status: 409, title: "Stale Sequence" },
  ALREADY_EXISTS: { status: 409, title: "Already Exists" },
  MARKET_NOT_TRADING: { status: 409, title: "Market Not Trading" },
  MARKET_UNAVAILABLE: { status: 503, title: "Market Unavailable" },
  STORAGE_FULL: { status: 503, title: "Storage Full" },
  LIVE_MINUTE: { status: 409, title: "Minute Holds Live Trades" },
  TOO_MANY_ANNOUNCEMENTS: { status: 409, title: "Too Many Announcements" },
  PAYLOAD_TOO_LARGE: { status: 413, title: "Payload Too Large" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: "Unsupported Media Type" },
  RATE_LIMITED: { status: 429, title: "Too Many Requests" },
  STREAM_LIMIT: { status: 429, title: "Too Many Streams" },
  HELD_LIMIT: { status: 429, title: "Too Many Held Events" },
  NOT_CONFIGURED: { status: 503, title: "Not Configured" },
  UNAVAILABLE: { status: 503, title: "Service Unavailable" },
  INTERNAL_ERROR: { status: 500, title: "Internal Server Error" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEM_CODES;

export interface FieldError {
  path: string;
  message: string;
}

/** The JSON body of a problem response, as sent on the wire. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  requestId?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** Extra members a problem may carry (`serverTime`, `retryAfterMs`, `errors`, ...). */
export type ProblemExtras = Record<string, unknown> & { errors?: FieldError[] };

export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly extras: ProblemExtras;
  readonly headers: Record<string, string>;

  constructor(code: ProblemCode, detail: string, extras: ProblemExtras = {}, headers: Record<string, string> = {}) {
    // A problem is an answer, not a fault: no stack trace is captured for it, which is most of
    // what a 4xx costs (`npm run bench:profile -- --route flood`). Faults keep theirs.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(detail);
    Error.stackTraceLimit = limit;
    this.name = "ProblemError";
    this.code = code;
    this.status = PROBLEM_CODES[code].status;
    this.extras = extras;
    this.headers = headers;
  }
}

/** Shorthand for `throw problem(...)` at call sites. */
export function problem(code: ProblemCode, detail: string, extras?: ProblemExtras, headers?: Record<string, string>): ProblemError {
  return new ProblemError(code, detail, extras, headers);
}

/** `/docs/errors#rate-limited` for `RATE_LIMITED`: the anchor the docs page renders. */
export function problemType(code: ProblemCode): string {
  return `/docs/errors#${code.toLowerCase().replaceAll("_", "-")}`;
}

export function problemBody(code: ProblemCode, detail: string, requestId: string | undefined, extras: ProblemExtras = {}): ProblemBody {
  const { status, title } = PROBLEM_CODES[code];
  return { type: problemType(code), title, status, code, detail, ...(requestId ? { requestId } : {}), ...extras };
}

const PROBLEM_CONTENT_TYPE = "application/problem+json";

export function problemResponse(error: ProblemError, requestId: string | undefined): Response {
  const body = problemBody(error.code, error.message, requestId, error.extras);
  const headers = new Headers(error.headers);
  headers.set("Content-Type", PROBLEM_CONTENT_TYPE);
  if (requestId) headers.set("X-Request-Id", requestId);
  return new Response(JSON.stringify(body), { status: error.status, headers });
}

/**
 * A failure that crosses a Durable Object RPC boundary. Thrown errors lose their class on the
 * way, so objects return `{ problem }` values and the Worker rethrows them here.
 */
export interface ProblemResult {
  problem: { code: ProblemCode; detail: string; extras?: ProblemExtras };
}

export function isProblemResult(value: unknown): value is ProblemResult {
  return typeof value === "object" && value !== null && "problem" in value;
}

export function toProblemResult(error: ProblemError): ProblemResult {
  return { problem: { code: error.code, detail: error.message, extras: error.extras } };
}

/** Runs `work`, turning an expected failure (a ProblemError) into a value that survives RPC. */
export function guarded<T>(work: () => T): T | ProblemResult {
  try {
    return work();
  } catch (error) {
    if (error instanceof ProblemError) return toProblemResult(error);
    throw error;
  }
}

/** The same, for work that awaits. */
export async function guardedAsync<T>(work: () => Promise<T>): Promise<T | ProblemResult> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ProblemError) return toProblemResult(error);
    throw error;
  }
}

/** Returns the value, or throws the problem it carries (its `retryAfterMs` as `Retry-After`: headers do not cross RPC). */
export function unwrap<T>(value: T | ProblemResult): T {
  if (isProblemResult(value)) {
    const { code, detail, extras } = value.problem;
    const retryAfterMs = extras?.retryAfterMs;
    throw new ProblemError(code, detail, extras, typeof retryAfterMs === "number" ? { "Retry-After": String(Math.ceil(retryAfterMs / 1_000)) } : {});
  }
  return value;
}
