import { PROBLEM_CODES, type ProblemCode } from "./problem";

type ResponseEntry = { description?: string; headers?: Record<string, unknown>; content?: unknown };
type Operation = { parameters?: unknown[]; requestBody?: unknown; responses?: Record<string, ResponseEntry> };
type Document = { paths?: Record<string, Record<string, Operation>>; components?: { headers?: Record<string, unknown> } };

const integer = { type: "integer" } as const;
/** The headers answers carry (docs/limits.md, docs/edge-reads.md), declared once and referenced. */
const HEADERS: Record<string, { description: string; schema: object }> = {
  "X-Request-Id": { description: "The request's id (a valid incoming one is echoed); also in problem bodies as requestId", schema: { type: "string" } },
  "RateLimit-Limit": { description: "Requests admitted per rolling second for this principal", schema: integer },
  "RateLimit-Remaining": { description: "Admissions left in the window now", schema: integer },
  "RateLimit-Reset": { description: "Whole seconds until a slot frees (at least 1 when none is left)", schema: integer },
  "Retry-After": { description: "Seconds to wait before retrying (at least 1)", schema: integer },
  "X-As-Of": { description: "The moment a market read shows, Unix ms", schema: integer },
  Age: { description: "Whole seconds since the edge copy was fetched", schema: integer },
  "Cache-Control": {
    description: "public, max-age=0, stale-if-error=5 on market reads; no-store on account, dashboard and operator answers",
    schema: { type: "string" },
  },
  Warning: { description: '110 - "Response is Stale" when a copy answers for a failing market', schema: { type: "string" } },
};
const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
/** Reads answered from the edge copies (docs/edge-reads.md). */
const MARKET_READ =
  /^\/(api|v1)\/(ticker|book-ticker|orderbook|trades|klines|markets|prices)\b|^\/binance\/api\/v3\/(depth|trades|historicalTrades|aggTrades|klines|uiKlines|avgPrice|ticker)\b/;

/** Where the service answers, as both documents (`/openapi.json`, `/asyncapi.json`) name it. */
export const SERVERS = {
  local: { host: "127.0.0.1:8787", description: "Local development (npm start)" },
  production: {
    host: "{host}",
    description: "Production: your deployment (docs/operations.md)",
    variables: { host: { default: "market-data-edge.your-subdomain.workers.dev", description: "The Worker's host: workers.dev or your route" } },
  },
};

/** Paths whose bodies the app limits to 64 KiB whatever the method (`app.ts`). */
const SMALL_BODY_PATHS = /^\/(account|admin|dashboard)\//;

/** Paths that name one market (a pair in the path, or `symbol`/`symbols`/`assets` in the query). */
const MARKET_PATH =
  /\{pair\}|^\/v1\/(ticker|book-ticker|orderbook|trades|klines|prices|ingest)\b|^\/api\/(ticker|book-ticker|prices)\b|^\/admin\/archive$|^\/tardis\/v1\/(data-feeds|datasets)\/|^\/data\/spot\/hourly\/.*\{file\}$/;
const SIGNED = /^\/v1\//;
const DIALECT = /^\/binance\//;
const CALLBACK = /^\/api\/gateway\//;
/**
 * Where each problem code can arise, by path (codes not listed can arise on any operation that
 * answers their status): so an operation's 4xx lists only the codes it can really answer, and a
 * status none of whose codes apply (a 401 on the public WebSocket) is not listed at all.
 */
const WHERE: Partial<Record<ProblemCode, RegExp>> = {
  INVALID_SYMBOL: MARKET_PATH,
  UNKNOWN_SYMBOL: MARKET_PATH,
  NOT_FOUND: /^\/(account\/api-keys|admin\/gateways|admin\/assets|admin\/publish-keys|admin\/announcements)\/\{|^\/data\/|^\/tardis\//,
  MISSING_CREDENTIALS: SIGNED,
  MALFORMED_CREDENTIALS: SIGNED,
  INVALID_API_KEY: SIGNED,
  INVALID_SIGNATURE: /^\/v1\/|^\/api\/gateway\//,
  TIMESTAMP_OUT_OF_WINDOW: /^\/v1\/|^\/api\/gateway\//,
  PERMISSION_DENIED: /^\/(v1|account)\//,
  IP_NOT_ALLOWED: SIGNED,
  UNAUTHENTICATED: /^\/(account|admin)\//,
  UNKNOWN_GATEWAY: CALLBACK,
  EVENT_ID_CONFLICT: CALLBACK,
  HELD_LIMIT: CALLBACK,
  SEQUENCE_GAP: /^\/v1\/ingest$/,
  STALE_SEQUENCE: /^\/v1\/ingest$/,
  // A gateway id, asset or symbol taken; a market's rules or status changed by another request meanwhile.
  ALREADY_EXISTS: /^\/admin\/(gateways|assets|markets)$|^\/admin\/markets\/\{pair\}|^\/admin\/publish-keys\/\{/,
  MARKET_NOT_TRADING: /^\/v1\/ingest$|^\/admin\/markets\/\{pair\}(\/status)?$/,
  // One market of a group failed to load or commit: it alone is held a while (docs/publishing.md#quarantine).
  MARKET_UNAVAILABLE: /^\/v1\/(ingest|publish)$/,
  // The group's host holds 98 % of its 10 GB (docs/capacity.md#a-hosts-storage).
  STORAGE_FULL: /^\/v1\/(ingest|publish)$/,
  LIVE_MINUTE: /\/history\/klines$/,
  TOO_MANY_ANNOUNCEMENTS: /^\/admin\/announcements$/,
  STREAM_LIMIT: /\/ws$|^\/v1\/publish$/,
  FORBIDDEN_MARKET: /^\/v1\/(ingest|publish)$/,
  NOT_CONFIGURED: /^\/(v1|account\/api-keys|admin|api\/gateway)\b/,
};

/** The problem codes an operation at `path` can answer with `status`. */
function problemCodes(status: number, path: string): ProblemCode[] {
  return (Object.keys(PROBLEM_CODES) as ProblemCode[]).filter((code) => PROBLEM_CODES[code].status === status && (WHERE[code]?.test(path) ?? true));
}

/**
 * Adds the answers that shared middleware gives on every route it guards, so each operation
 * lists every status it can answer without each route repeating them, each with the problem
 * codes it can carry there ({@link problemCodes}): 400 where there is
 * anything to validate, 415 and 413 where a body is taken (413 on the account, dashboard and
 * operator paths for any method), 429 everywhere (every route is limited: per IP, per key, per
 * gateway, failed authentications included), and 503 everywhere (a limiter that cannot be reached
 * fails closed; a market that cannot answer past its stale-if-error bound). And the headers
 * every answer carries: the request id and RateLimit-* everywhere, Retry-After on 429 and 503,
 * the freshness headers on market reads. A route's own entries are kept.
 *
 * @example
 * app.get("/openapi.json", (c) => c.json(withSharedAnswers(app.getOpenAPI31Document(config))));
 */
export function withSharedAnswers<T extends object>(document: T): T {
  for (const [path, item] of Object.entries((document as Document).paths ?? {})) {
    // A dialect answers in its own error shape and declares its own error answers (docs/binance.md#errors).
    const dialect = DIALECT.test(path);
    for (const operation of Object.values(item)) {
      const statuses: number[] = dialect ? [] : [429, 503];
      if (!dialect && ((operation.parameters?.length ?? 0) > 0 || operation.requestBody)) statuses.push(400);
      if (operation.requestBody) statuses.push(413, 415);
      else if (SMALL_BODY_PATHS.test(path)) statuses.push(413);
      const responses = (operation.responses ??= {});
      for (const status of statuses) {
        responses[String(status)] ??= { content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } } };
      }
      for (const [status, response] of Object.entries(responses)) {
        if (Number(status) >= 400 && !dialect) {
          const codes = problemCodes(Number(status), path);
          if (codes.length === 0) {
            delete responses[status];
            continue;
          }
          response.description = `Problem: ${codes.join(", ")}`;
        }
        const names = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
        if (status === "429" || status === "503") names.push("Retry-After");
        if (status === "200" && MARKET_READ.test(path)) names.push("X-As-Of", "Age", "Cache-Control", "Warning");
        if (status.startsWith("2") && SMALL_BODY_PATHS.test(path)) names.push("Cache-Control");
        response.headers = { ...Object.fromEntries(names.map((name) => [name, ref(name)])), ...response.headers };
      }
      operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }
  const components = ((document as Document).components ??= {});
  components.headers = { ...HEADERS, ...components.headers };
  return document;
}

/**
 * Says of every operation that declares no security scheme that it needs none (`security: []`),
 * so generated clients and linters do not take the document-wide default for it.
 *
 * @example
 * app.get("/openapi.json", (c) => c.json(withPublicSecurity(document)));
 */
export function withPublicSecurity<T extends object>(document: T): T {
  for (const item of Object.values((document as Document).paths ?? {})) {
    for (const operation of Object.values(item) as (Operation & { security?: unknown[] })[]) operation.security ??= [];
  }
  return document;
}
