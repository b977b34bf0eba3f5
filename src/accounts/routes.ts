import { createRoute, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { clientIp } from "../access/client-address";
import { jsonBody, problemResponses } from "../core/schemas";
import type { AppEnv } from "../http/env";
import { type AppRouter, createRouter } from "../http/router";
import { AccountSchema, ApiKeySchema, CreatedKeySchema, Credentials, KeyIdParam, NewKeySchema, UsageQuery, UsageSchema } from "./schemas";
import { createApiKey, keyUsage, listApiKeys, revokeApiKey, signIn, signUp } from "./service";
import { endSession, requireSameOrigin, requireSession, startSession } from "./sessions";

const tags = ["Account and API keys"];
const cookieAuth = [{ Session: [] }];

/** State changes must come from this origin (CSRF, docs/signing.md). */
const sameOrigin = createMiddleware<AppEnv>(async (c, next) => {
  requireSameOrigin(c);
  await next();
});

/** Starts the account's session (its cookie on the answer); returns the account. */
async function withSession<T extends { id: string }>(c: Context<AppEnv>, account: T): Promise<T> {
  await startSession(c, account.id);
  return account;
}

/** Signing up, in and out: the session cookie and its CSRF token. */
function sessionRoutes(router: AppRouter, limit: MiddlewareHandler<AppEnv>): void {
  router
    .openapi(
      createRoute({
        method: "post",
        path: "/signup",
        operationId: "signUp",
        tags,
        middleware: [limit, sameOrigin],
        summary: "Create an account (and sign in)",
        description: "Passwords: 10–128 characters, not easily guessed. Stored as PBKDF2-SHA256 (100,000 iterations, 16-byte salt).",
        request: jsonBody(Credentials),
        responses: {
          201: { description: "Created; the session cookie is set", content: { "application/json": { schema: AccountSchema } } },
          ...problemResponses(400, 403, 429),
        },
      }),
      async (c) => {
        const { email, password } = c.req.valid("json");
        return c.json(await withSession(c, await signUp(c.env, email, password)), 201);
      },
    )
    .openapi(
      createRoute({
        method: "post",
        path: "/login",
        operationId: "logIn",
        tags,
        middleware: [limit, sameOrigin],
        summary: "Sign in: sets the session cookie (HttpOnly; Secure; SameSite=Lax)",
        description:
          "Failed sign-ins are throttled before the password is checked. Per account: 5 failures are free, then each attempt waits 1 s, 2 s, 4 s … (at most 5 minutes) after the previous failure; forgotten 15 minutes after the last failure, cleared by a success. Per client address: 20 failures, then none until 15 minutes after the last. Refusals are 429 RATE_LIMITED with Retry-After.",
        request: jsonBody(Credentials),
        responses: { 200: { description: "Signed in", content: { "application/json": { schema: AccountSchema } } }, ...problemResponses(400, 401, 403, 429) },
      }),
      async (c) => {
        const { email, password } = c.req.valid("json");
        return c.json(await withSession(c, await signIn(c.env, email, password, clientIp(c.req.raw))), 200);
      },
    )
    .openapi(
      createRoute({
        method: "post",
        path: "/logout",
        operationId: "logOut",
        tags,
        security: cookieAuth,
        middleware: [limit, sameOrigin],
        summary: "Sign out: ends the session",
        responses: { 204: { description: "Signed out" }, ...problemResponses(403, 429) },
      }),
      async (c) => {
        await endSession(c);
        return c.body(null, 204);
      },
    );
}

/** The account's API keys: listing, creating, their usage and revoking. */
function keyRoutes(router: AppRouter, limit: MiddlewareHandler<AppEnv>): void {
  router
    .openapi(
      createRoute({
        method: "get",
        path: "/api-keys",
        operationId: "listApiKeys",
        tags,
        middleware: [limit],
        security: cookieAuth,
        summary: "List the account's API keys (never their secrets)",
        responses: {
          200: { description: "Keys, newest first", content: { "application/json": { schema: z.object({ keys: z.array(ApiKeySchema) }) } } },
          ...problemResponses(401, 429),
        },
      }),
      async (c) => {
        const session = await requireSession(c);
        return c.json({ keys: await listApiKeys(c.env, session.accountId) }, 200);
      },
    )
    .openapi(
      createRoute({
        method: "post",
        path: "/api-keys",
        operationId: "createApiKey",
        tags,
        security: cookieAuth,
        middleware: [limit, sameOrigin],
        summary: "Create an API key; its secret is in this answer and never again",
        description: "At most 20 active keys per account.",
        request: jsonBody(NewKeySchema),
        responses: { 201: { description: "Created", content: { "application/json": { schema: CreatedKeySchema } } }, ...problemResponses(400, 401, 403, 429) },
      }),
      async (c) => {
        const session = await requireSession(c);
        return c.json(await createApiKey(c.env, session.accountId, c.req.valid("json")), 201);
      },
    )
    .openapi(
      createRoute({
        method: "get",
        path: "/api-keys/{id}/usage",
        operationId: "apiKeyUsage",
        tags,
        middleware: [limit],
        security: cookieAuth,
        summary: "A key's usage: requests and 429s per minute (24 h) or per hour (30 days)",
        description:
          "Counted as the key's guard admits or refuses each signed request, by the key's usage ledger (one of 32 objects, which stores its keys' counts within 5 s as one row a bucket for all of them). Includes the requests made just before the read. Buckets without use are left out. Only the key's owner sees it: any other account gets 404.",
        request: { params: KeyIdParam, query: UsageQuery },
        responses: { 200: { description: "Usage", content: { "application/json": { schema: UsageSchema } } }, ...problemResponses(400, 401, 404, 429) },
      }),
      async (c) => {
        const session = await requireSession(c);
        const { interval, since } = c.req.valid("query");
        return c.json(await keyUsage(c.env, session.accountId, c.req.valid("param").id, interval, since), 200);
      },
    )
    .openapi(
      createRoute({
        method: "delete",
        path: "/api-keys/{id}",
        operationId: "revokeApiKey",
        tags,
        security: cookieAuth,
        middleware: [limit, sameOrigin],
        summary: "Revoke an API key: the very next request with it fails",
        request: { params: KeyIdParam },
        responses: { 204: { description: "Revoked" }, ...problemResponses(401, 403, 404, 429, 503) },
      }),
      async (c) => {
        const session = await requireSession(c);
        await revokeApiKey(c.env, session.accountId, c.req.valid("param").id);
        return c.body(null, 204);
      },
    );
}

/**
 * The account JSON API, mounted at `/account`; `limit` stands in front of every route.
 *
 * @example
 * app.route("/account", accountRoutes(publicLimit));
 */
export function accountRoutes(limit: MiddlewareHandler<AppEnv>) {
  const router = createRouter();
  sessionRoutes(router, limit);
  keyRoutes(router, limit);
  return router;
}
