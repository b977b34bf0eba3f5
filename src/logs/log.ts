/**
 * The service's structured log lines (docs/operations.md#logs): one JSON object per line, with
 * the fields an operator searches by. Only these fields are written — never a secret, a
 * signature, a password, a cookie or a session — so a caller cannot leak one by passing it.
 */
export interface LogEvent {
  event: "auth.refused" | "request.failed" | "operator.change" | "publish.channel.open" | "publish.channel.close";
  requestId?: string | undefined;
  /** The route pattern (`/v1/ticker/24hr`), never the URL with its query. */
  route?: string | undefined;
  method?: string | undefined;
  status?: number | undefined;
  /** The problem code (`INVALID_SIGNATURE`). */
  code?: string | undefined;
  /** Who: `address`, `key`, `gateway`, `operator`, `account`. */
  principal?: string | undefined;
  /** A key's id (public), an operator credential's id (a digest prefix), a gateway's id. */
  keyId?: string | undefined;
  operator?: string | undefined;
  gatewayId?: string | undefined;
  /** A close code and reason (a channel's close). */
  closeCode?: number | undefined;
  /** An internal error's message (the service's own words, not a request's body) and where it was thrown. */
  error?: string | undefined;
  stack?: string | undefined;
}

const FIELDS: (keyof LogEvent)[] = [
  "event",
  "requestId",
  "route",
  "method",
  "status",
  "code",
  "principal",
  "keyId",
  "operator",
  "gatewayId",
  "closeCode",
  "error",
  "stack",
];

/** Writes one line (`console.log` for information, `console.error` for a failure). */
export function logEvent(event: LogEvent, level: "info" | "error" = "info"): void {
  const line: Record<string, unknown> = { level };
  for (const field of FIELDS) {
    const value = event[field];
    if (value !== undefined && value !== "") line[field] = typeof value === "string" ? value.slice(0, field === "stack" ? 2_000 : 300) : value;
  }
  (level === "error" ? console.error : console.log)(JSON.stringify(line));
}

/**
 * What went wrong, for the operator: one JSON line `{"level":"error","message":…, …fields}` — the
 * shape of every line the code writes besides {@link logEvent}'s (docs/operations.md#logs). An
 * `error` field is written as its text.
 *
 * @example
 * logFailure("gate: market host did not answer", { symbol, error });
 */
export function logFailure(message: string, fields: Record<string, unknown> = {}, level: "error" | "warn" = "error"): void {
  const line: Record<string, unknown> = { level, message };
  for (const [name, value] of Object.entries(fields)) line[name] = name === "error" && typeof value !== "string" ? String(value) : value;
  console.error(JSON.stringify(line));
}
