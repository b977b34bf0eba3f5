import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { chargeClientIp } from "../access/middleware";
import type { AuditContext } from "../audit/audit-log";
import { toHex } from "../core/encoding";
import { problem } from "../core/problem";
import { okJson, problemResponses } from "../core/schemas";
import type { AppEnv } from "../http/env";
import { routesOf } from "../http/router";

async function digest(text: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
}

/** The OpenAPI tag and security scheme of every operator route (`/admin/*`). */
const OPERATOR_TAGS = ["Operator (admin)"];
const OPERATOR_SECURITY = [{ AdminToken: [] }];

/**
 * The operator API's bearer token (`ADMIN_TOKEN`, a Worker secret). Never a default: without
 * the secret every operator route answers 503 `NOT_CONFIGURED`. Compared as digests in
 * constant time.
 */
const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const token = c.env.ADMIN_TOKEN;
  if (!token) throw problem("NOT_CONFIGURED", "ADMIN_TOKEN is not set: set it with `wrangler secret put ADMIN_TOKEN`");
  const presented = /^Bearer +(\S+) *$/i.exec(c.req.header("Authorization") ?? "")?.[1];
  if (!presented || !crypto.subtle.timingSafeEqual(await digest(presented), await digest(token))) {
    // A failed authentication counts against the client IP (docs/limits.md): guessing is throttled.
    throw await chargeClientIp(c.env, c.req.raw, problem("UNAUTHENTICATED", "send Authorization: Bearer <ADMIN_TOKEN>"));
  }
  // The credential's id in the audit log: enough to tell two tokens apart, nothing to sign with.
  c.set("operator", `admin:${toHex(await digest(`operator-id:${token}`)).slice(0, 16)}`);
  await next();
});

/**
 * Declares an operator route (`/admin/*`): its tag, the bearer token's security scheme and
 * `requireAdmin` in front.
 *
 * @example
 * router.openapi(operatorRoute("delete", "/gateways/{id}", { operationId: "revokeGateway", summary, request, responses }), handler);
 */
export const operatorRoute = routesOf({ tags: OPERATOR_TAGS, security: OPERATOR_SECURITY, middleware: [requireAdmin] });

/**
 * Who made an operator change, where and when: the audit log's part of the request
 * (docs/operations.md#audit-log). Call it in a handler behind `requireAdmin`.
 *
 * @example
 * await setMarketStatus(c.env.DB, symbol, status, auditOf(c));
 */
export function auditOf(c: Context<AppEnv>): AuditContext {
  const operator = c.get("operator");
  if (!operator) throw new Error("auditOf outside requireAdmin");
  return { at: Date.now(), operator, route: `${c.req.method} ${c.req.routePath}` };
}

/**
 * An operator route that removes or ends something and answers 204 with no body, as the route
 * and its handler to spread into `openapi`: the method, the path's parameters and the answers are
 * the removal's; the words and the act are the route's own.
 *
 * @example
 * router.openapi(
 *   ...operatorRemoval("/gateways/{id}", GatewayParam, { operationId: "revokeGateway", summary, removed: "Revoked" }, (c, { id }) =>
 *     revokeGateway(c.env, id, auditOf(c)),
 *   ),
 * );
 */
export function operatorRemoval<P extends string, Params extends z.ZodObject>(
  path: P,
  params: Params,
  words: { operationId: string; summary: string; removed: string; problems?: number[] },
  act: (c: Context<AppEnv>, params: z.infer<Params>) => Promise<unknown>,
) {
  const { problems = [401, 404, 429, 503], removed, ...doc } = words;
  const route = operatorRoute("delete", path, { ...doc, request: { params }, responses: { 204: { description: removed }, ...problemResponses(...problems) } });
  const handler = async (c: Context<AppEnv>) => {
    // The route's validator has run: the parameters are known good, read as it left them.
    await act(c, (c.req.valid as (target: "param") => z.infer<Params>)("param"));
    return c.body(null, 204);
  };
  return [route, handler] as const;
}

/**
 * An operator route that lists every one of a kind, as `{ [field]: [...] }`, as the route and its
 * handler to spread into `openapi`; its operationId is `list` and the field's name.
 *
 * @example
 * router.openapi(...operatorListing("/gateways", { gateways: GatewaySchema }, "List gateways (never their secrets)", listGateways));
 */
export function operatorListing<P extends string, F extends string, S extends z.ZodType>(
  path: P,
  listed: { [K in F]: S },
  summary: string,
  list: (env: Env) => Promise<z.infer<S>[]>,
) {
  const [field, schema] = Object.entries(listed)[0] as [F, S];
  const answer = z.object({ [field]: z.array(schema) } as { [K in F]: z.ZodArray<S> });
  const operationId = `list${field[0]!.toUpperCase()}${field.slice(1)}`;
  const route = operatorRoute("get", path, { operationId, summary, responses: { ...okJson(answer, summary), ...problemResponses(401, 429, 503) } });
  const handler = async (c: Context<AppEnv>) => c.json({ [field]: await list(c.env) } as z.infer<typeof answer>, 200);
  return [route, handler] as const;
}
