import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { ProblemError } from "../core/problem";
import type { AppEnv } from "../http/env";

/**
 * Errors as Binance sends them: `{"code": -1121, "msg": "Invalid symbol."}` with Binance's HTTP
 * statuses, so a Binance client's error mapping works unchanged (docs/binance.md#errors). The
 * dialect decides nothing itself: every refusal is the service's own problem, translated here.
 */
export const BINANCE_ERRORS = {
  UNKNOWN: { code: -1000, status: 400, msg: "An unknown error occurred while processing the request." },
  DISCONNECTED: { code: -1001, status: 503, msg: "Internal error; unable to process your request. Please try again." },
  TOO_MANY_REQUESTS: { code: -1003, status: 429, msg: "" },
  UNSUPPORTED_OPERATION: { code: -1020, status: 404, msg: "This operation is not supported." },
  ILLEGAL_CHARS: { code: -1100, status: 400, msg: "" },
  TOO_MANY_PARAMETERS: { code: -1101, status: 400, msg: "Too many parameters sent for this endpoint." },
  MANDATORY_PARAM_EMPTY_OR_MALFORMED: { code: -1102, status: 400, msg: "" },
  UNREAD_PARAMETERS: { code: -1104, status: 400, msg: "Not all sent parameters were read." },
  BAD_INTERVAL: { code: -1120, status: 400, msg: "Invalid interval." },
  BAD_SYMBOL: { code: -1121, status: 400, msg: "Invalid symbol." },
  INVALID_SYMBOLSTATUS: { code: -1122, status: 400, msg: "Invalid symbolStatus." },
  INVALID_PARAMETER_COMBINATION: { code: -1128, status: 400, msg: "Combination of optional parameters invalid." },
  INVALID_PARAMETER: { code: -1130, status: 400, msg: "Invalid data sent for a parameter." },
  SYMBOL_DOES_NOT_MATCH_STATUS: { code: -1220, status: 400, msg: "The symbol's status does not match the requested symbolStatus." },
} as const;

export type BinanceErrorName = keyof typeof BINANCE_ERRORS;

/** The codes this dialect can answer, for its documents and tests. */
export const BINANCE_ERROR_CODES: readonly number[] = Object.values(BINANCE_ERRORS).map((e) => e.code);

export class BinanceError extends Error {
  readonly code: number;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(name: BinanceErrorName, msg?: string, headers: Record<string, string> = {}) {
    const known = BINANCE_ERRORS[name];
    // An answer, not a fault: no stack trace (as ProblemError).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(msg || known.msg);
    Error.stackTraceLimit = limit;
    this.code = known.code;
    this.status = known.status;
    this.headers = headers;
  }
}

/** Shorthand for `throw binanceError(...)`. */
export function binanceError(name: BinanceErrorName, msg?: string): BinanceError {
  return new BinanceError(name, msg);
}

/** Binance's words for a parameter that is missing or empty. */
export function missingParameter(name: string): BinanceError {
  return new BinanceError("MANDATORY_PARAM_EMPTY_OR_MALFORMED", `Mandatory parameter '${name}' was not sent, was empty/null, or malformed.`);
}

/** Binance's words for a parameter outside its legal form. */
export function illegalParameter(name: string, legal: string): BinanceError {
  return new BinanceError("ILLEGAL_CHARS", `Illegal characters found in parameter '${name}'; legal range is '${legal}'.`);
}

/** The Binance error a service problem stands for. */
function fromProblem(error: ProblemError): BinanceError {
  switch (error.code) {
    case "UNKNOWN_SYMBOL":
    case "INVALID_SYMBOL":
      return new BinanceError("BAD_SYMBOL", undefined, error.headers);
    case "RATE_LIMITED":
      return new BinanceError(
        "TOO_MANY_REQUESTS",
        `Too many requests; current limit is ${error.message}. Please use WebSocket Streams for live updates to avoid polling the API.`,
        error.headers,
      );
    case "STREAM_LIMIT":
      return new BinanceError("TOO_MANY_REQUESTS", error.message, error.headers);
    case "NOT_FOUND":
    case "METHOD_NOT_ALLOWED":
      return new BinanceError("UNSUPPORTED_OPERATION", error.message, error.headers);
    case "UNAVAILABLE":
    case "NOT_CONFIGURED":
    case "INTERNAL_ERROR":
      return new BinanceError("DISCONNECTED", undefined, error.headers);
    default:
      return new BinanceError("INVALID_PARAMETER", error.message, error.headers);
  }
}

function binanceErrorResponse(error: BinanceError, requestId: string | undefined): Response {
  const headers = new Headers(error.headers);
  headers.set("Content-Type", "application/json");
  if (requestId) headers.set("X-Request-Id", requestId);
  return new Response(JSON.stringify({ code: error.code, msg: error.message }), { status: error.status, headers });
}

/** The dialect's error path: every thrown value leaves in Binance's shape. */
export const handleBinanceError: ErrorHandler<AppEnv> = (error, c) => {
  const requestId = c.get("requestId");
  if (error instanceof BinanceError) return binanceErrorResponse(error, requestId);
  if (error instanceof ProblemError) return binanceErrorResponse(fromProblem(error), requestId);
  if (error instanceof HTTPException && error.status < 500) return binanceErrorResponse(new BinanceError("INVALID_PARAMETER", error.message), requestId);
  // Logged once, with the route and who asked, by `logRequests` (src/logs/request-log.ts).
  return binanceErrorResponse(new BinanceError("DISCONNECTED"), requestId);
};
