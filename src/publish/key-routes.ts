import { z } from "@hono/zod-openapi";
import { KEY_ID_RULE } from "../access/keys";
import { auditOf, operatorListing, operatorRemoval, operatorRoute } from "../admin/auth";
import { createdJson, jsonBody, okJson, problemResponses } from "../core/schemas";
import { createRouter } from "../http/router";
import { AllowIps, ExpiresAt, Markets, PublishKeySchema } from "./key-schemas";
import { amendPublishKey, issuePublishKey, listPublishKeys, revokePublishKey } from "./keys";

const KeyParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "pk_0123456789abcdef01234567", description: KEY_ID_RULE }),
});

/**
 * Publishing keys, the operator's, mounted at `/admin` (docs/operations.md#publish-keys): issue,
 * list, change markets / allow-list / expiry, revoke. Every change is in the audit log.
 *
 * @example
 * app.route("/admin", publishKeyRoutes);
 */
export const publishKeyRoutes = createRouter()
  .openapi(
    operatorRoute("post", "/publish-keys", {
      operationId: "issuePublishKey",
      summary: "Issue a publishing key limited to its markets; its secret is in this answer only",
      description:
        "The key signs POST /v1/ingest and GET /v1/publish like any API key (docs/signing.md). A batch for a market outside `markets` is refused whole: 403 FORBIDDEN_MARKET. Account keys cannot publish.",
      request: jsonBody(
        z
          .object({
            label: z.string().trim().min(1).max(64).openapi({ example: "ADA feed handler" }),
            markets: Markets,
            expiresAt: ExpiresAt.default(null),
            allowIps: AllowIps.default([]),
          })
          .strict(),
      ),
      responses: {
        ...createdJson(PublishKeySchema.extend({ secret: z.string().openapi({ description: "Shown exactly once" }) }), "Issued"),
        ...problemResponses(400, 401, 413, 415, 429, 503),
      },
    }),
    async (c) => c.json(await issuePublishKey(c.env, c.req.valid("json"), auditOf(c)), 201),
  )
  .openapi(...operatorListing("/publish-keys", { publishKeys: PublishKeySchema }, "Every publishing key, newest first (never a secret)", listPublishKeys))
  .openapi(
    operatorRoute("patch", "/publish-keys/{id}", {
      operationId: "changePublishKey",
      summary: "Change a publishing key's markets, allow-list or expiry",
      description:
        "In force at the key's guard before the answer: the next request is held to it. An open GET /v1/publish channel takes it up at once, and within 10 s at the latest (docs/publishing.md#rights-on-an-open-channel).",
      request: {
        params: KeyParam,
        ...jsonBody(
          z
            .object({ markets: Markets.optional(), allowIps: AllowIps.optional(), expiresAt: ExpiresAt.optional() })
            .strict()
            .refine((change) => Object.keys(change).length > 0, "name at least one of markets, allowIps, expiresAt"),
        ),
      },
      responses: { ...okJson(PublishKeySchema, "The key"), ...problemResponses(400, 401, 404, 409, 413, 415, 429, 503) },
    }),
    async (c) => c.json(await amendPublishKey(c.env, c.req.valid("param").id, c.req.valid("json"), auditOf(c)), 200),
  )
  .openapi(
    ...operatorRemoval(
      "/publish-keys/{id}",
      KeyParam,
      {
        operationId: "revokePublishKey",
        summary: "Revoke a publishing key: the next request fails, open channels close within 10 s",
        removed: "Revoked",
        problems: [400, 401, 404, 413, 429, 503],
      },
      (c, { id }) => revokePublishKey(c.env, id, auditOf(c)),
    ),
  );
