import { PROBLEM_CODES, type ProblemCode } from "./problem";

type Operation = { parameters?: unknown[]; requestBody?: unknown; responses?: Record<string, unknown> };
type Document = { paths?: Record<string, Record<string, Operation>> };

/** Paths whose bodies the app limits to 64 KiB whatever the method (`app.ts`). */
const SMALL_BODY_PATHS = /^\/(account|admin|dashboard)\//;

function describe(status: number): string {
  const codes = (Object.keys(PROBLEM_CODES) as ProblemCode[]).filter((code) => PROBLEM_CODES[code].status === status);
  return `Problem: ${codes.join(", ")}`;
}

/**
 * Adds the answers that shared middleware gives on every route it guards, so each operation
 * lists every status it can answer without each route repeating them: 400 where there is
 * anything to validate, 415 and 413 where a body is taken (413 on the account, dashboard and
 * operator paths for any method), 429 everywhere (every route is limited: per IP, per key, per
 * gateway, failed authentications included), and 503 everywhere (a limiter that cannot be reached
 * fails closed; a market that cannot answer past its stale-if-error bound). A route's own
 * entries are kept.
 *
 * @example
 * app.get("/openapi.json", (c) => c.json(withSharedAnswers(app.getOpenAPI31Document(config))));
 */
export function withSharedAnswers<T extends object>(document: T): T {
  for (const [path, item] of Object.entries((document as Document).paths ?? {})) {
    for (const operation of Object.values(item)) {
      const statuses: number[] = [429, 503];
      if ((operation.parameters?.length ?? 0) > 0 || operation.requestBody) statuses.push(400);
      if (operation.requestBody) statuses.push(413, 415);
      else if (SMALL_BODY_PATHS.test(path)) statuses.push(413);
      const responses = (operation.responses ??= {});
      for (const status of statuses) {
        responses[String(status)] ??= {
          description: describe(status),
          content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
        };
      }
      operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }
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
