import { z } from "@hono/zod-openapi";
import { operatorRoute } from "../admin/auth";
import { okJson, problemResponses, queryInt, queryIntOr } from "../core/schemas";
import { createRouter } from "../http/router";
import { readAudit } from "./audit-log";

const AuditRecordSchema = z
  .object({
    id: z.number().int(),
    at: z.number().int(),
    operator: z.string().openapi({ description: "The operator credential's id, never the token", example: "admin:3f2a9c0d1b7e4a65" }),
    route: z.string().openapi({ example: "PUT /admin/markets/:pair/status" }),
    action: z.string().openapi({ example: "market.status" }),
    target: z.string().openapi({ example: "BTCUSDT" }),
    change: z.unknown().openapi({ example: { from: "TRADING", to: "HALTED" } }),
  })
  .openapi("AuditRecord");

/**
 * `GET /audit`, mounted at `/admin` (docs/operations.md#audit-log): every operator change, oldest first, paged.
 *
 * @example
 * app.route("/admin", auditRoutes);
 */
export const auditRoutes = createRouter().openapi(
  operatorRoute("get", "/audit", {
    operationId: "readAuditLog",
    summary: "The audit log: every operator change with its time, route, operator credential id and what changed",
    description:
      "Listings, rule changes, halts and delistings (and their undoing when a market could not be told), asset status, gateways and their secrets, publishing keys. Oldest first from `since`; `nextCursor` continues.",
    request: {
      query: z.object({
        since: queryInt(0, 8_640_000_000_000_000).openapi({ description: "Unix ms; records at or after it" }),
        limit: queryIntOr(1, 500, 100).openapi({ description: "1–500, default 100" }),
        cursor: z.string().max(256).optional().openapi({ description: "nextCursor of the previous page" }),
      }),
    },
    responses: {
      ...okJson(z.object({ data: z.array(AuditRecordSchema), nextCursor: z.string().nullable() }), "A page"),
      ...problemResponses(400, 401, 429, 503),
    },
  }),
  async (c) => c.json((await readAudit(c.env.DB, c.req.valid("query"))) as never, 200),
);
