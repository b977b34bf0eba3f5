import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { auditOf, operatorListing, operatorRemoval, operatorRoute } from "../admin/auth";
import { auditStatement } from "../audit/audit-log";
import { priceIndex } from "../core/object-ids";
import { problem, unwrap } from "../core/problem";
import { createdJson, jsonBody, okJson, problemResponses } from "../core/schemas";
import type { AppEnv } from "../http/env";
import { createRouter } from "../http/router";
import { ensureRegistry } from "../registry/copy";
import { MAINTENANCE_NOTICE_LEAD_MS } from "../streams/protocol";
import {
  type Announcement,
  AnnouncementInputSchema,
  AnnouncementPatchSchema,
  AnnouncementSchema,
  MAX_ANNOUNCED_MARKETS,
  MAX_ANNOUNCEMENTS,
  MAX_TITLE_LENGTH,
} from "./schemas";

const IdParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "ann_3f9c2a1b7d4e5f60" }),
});

const PUSHED = `Every stream shard is told before the answer: \`status\` subscribers get the new status, and a Binance-dialect connection gets \`serverShutdown\` ${MAINTENANCE_NOTICE_LEAD_MS / 1000} s before a maintenance starts (at once when it starts sooner). GET /api/status shows it within its edge copies' age.`;

/** Each named market must be listed (under its canonical symbol), as the registry has it now. */
async function checkMarkets(c: Context<AppEnv>, markets: string[] | null | undefined): Promise<void> {
  if (!markets) return;
  const registry = await ensureRegistry(c.env);
  const unknown = markets.findIndex((symbol) => !registry.bySymbol.has(symbol));
  if (unknown !== -1) {
    throw problem("VALIDATION_FAILED", `markets.${unknown}: ${markets[unknown]} is not a listed market (its canonical symbol, as GET /api/markets names it)`, {
      errors: [{ path: `markets.${unknown}`, message: "not a listed market" }],
    });
  }
}

/** Recorded once the change is made (it lives in the price index, not in D1, so the two cannot be one batch). */
function audit(c: Context<AppEnv>, action: string, target: string, change: unknown): Promise<unknown> {
  return auditStatement(c.env.DB, auditOf(c), action, target, change).run();
}

/**
 * Announcements, the operator's, mounted at `/admin` (docs/operations.md#announcements): made,
 * changed and deleted here, shown in GET /api/status and /status, pushed on the `status` stream.
 * Every change is in the audit log.
 *
 * @example
 * app.route("/admin", announcementRoutes);
 */
export const announcementRoutes = createRouter()
  .openapi(
    operatorRoute("post", "/announcements", {
      operationId: "announce",
      summary: "Announce a maintenance, an incident or news to every client",
      description: `\`kind\` maintenance makes the system status \`maintenance\` from \`startsAt\` (now when left out) until \`endsAt\` (open when null); an incident makes it \`degraded\`. \`title\` up to ${MAX_TITLE_LENGTH} characters; \`markets\` (up to ${MAX_ANNOUNCED_MARKETS} listed symbols) when it concerns only those. At most ${MAX_ANNOUNCEMENTS} are kept: a 51st is 409 TOO_MANY_ANNOUNCEMENTS. ${PUSHED}`,
      request: jsonBody(AnnouncementInputSchema),
      responses: { ...createdJson(AnnouncementSchema, "Announced"), ...problemResponses(400, 401, 409, 413, 415, 429, 503) },
    }),
    async (c) => {
      const input = c.req.valid("json");
      await checkMarkets(c, input.markets);
      const made: Announcement = unwrap(await priceIndex(c.env).announce(input));
      await audit(c, "announcement.create", made.id, made);
      return c.json(made, 201);
    },
  )
  .openapi(
    ...operatorListing(
      "/announcements",
      { announcements: AnnouncementSchema },
      "Every announcement kept, ended ones too, in the order made",
      (env) => priceIndex(env).announcements() as Promise<Announcement[]>,
    ),
  )
  .openapi(
    operatorRoute("patch", "/announcements/{id}", {
      operationId: "changeAnnouncement",
      summary: "Change an announcement: its kind, title, times or markets",
      description: `Fields left out stay as they are; \`endsAt\` may be set to end it now. ${PUSHED}`,
      request: { params: IdParam, ...jsonBody(AnnouncementPatchSchema.refine((patch) => Object.keys(patch).length > 0, "name at least one field")) },
      responses: { ...okJson(AnnouncementSchema, "The announcement"), ...problemResponses(400, 401, 404, 413, 415, 429, 503) },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const patch = c.req.valid("json");
      await checkMarkets(c, patch.markets);
      const changed: Announcement = unwrap(await priceIndex(c.env).changeAnnouncement(id, patch));
      await audit(c, "announcement.change", id, patch);
      return c.json(changed, 200);
    },
  )
  .openapi(
    ...operatorRemoval(
      "/announcements/{id}",
      IdParam,
      {
        operationId: "deleteAnnouncement",
        summary: "Delete an announcement: it leaves the status at once",
        removed: "Deleted",
        problems: [400, 401, 404, 413, 429, 503],
      },
      async (c, { id }) => {
        if (!(await priceIndex(c.env).removeAnnouncement(id))) throw problem("NOT_FOUND", `no announcement ${id}`);
        await audit(c, "announcement.delete", id, {});
      },
    ),
  );
