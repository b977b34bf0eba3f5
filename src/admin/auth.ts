import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { chargeClientIp } from "../access/middleware";
import type { AuditContext } from "../audit/audit-log";
import { toHex } from "../core/encoding";
import { problem } from "../core/problem";
import { routesOf } from "../core/router";
import type { AppEnv } from "../env";

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
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
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
