/**
 * Every failure the service answers is RFC 9457 problem JSON with a stable `code`; the client
 * throws it as a {@link MarketDataError} so callers branch on `code`, never on message text.
 */
export interface ProblemBody {
  type?: string;
  title?: string;
  status?: number;
  code?: string;
  detail?: string;
  requestId?: string;
  retryAfterMs?: number;
  serverTime?: number;
  errors?: { path: string; message: string }[];
  [extra: string]: unknown;
}

export class MarketDataError extends Error {
  override readonly name = "MarketDataError";
  /** HTTP status (0 when no answer came: a network failure or a timeout). */
  readonly status: number;
  /** The problem's code, e.g. `RATE_LIMITED`, `UNKNOWN_SYMBOL`, `INVALID_SIGNATURE`; `NETWORK_ERROR` without an answer. */
  readonly code: string;
  readonly detail: string;
  /** The `X-Request-Id` of the answer: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The whole problem body (field `errors`, `retryAfterMs`, `serverTime` …). */
  readonly problem: ProblemBody;

  constructor(status: number, problem: ProblemBody, requestId?: string) {
    const code = problem.code ?? (status === 0 ? "NETWORK_ERROR" : `HTTP_${status}`);
    const detail = problem.detail ?? problem.title ?? code;
    super(`${code} (${status}): ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.requestId = problem.requestId ?? requestId;
    this.problem = problem;
  }

  /** Reads a failed answer's body; a body that is not problem JSON still gives status and text. */
  static async from(response: Response): Promise<MarketDataError> {
    const text = await response.text();
    let problem: ProblemBody;
    try {
      problem = JSON.parse(text) as ProblemBody;
    } catch {
      problem = { detail: text.slice(0, 500) || response.statusText };
    }
    return new MarketDataError(response.status, problem, response.headers.get("X-Request-Id") ?? undefined);
  }
}
