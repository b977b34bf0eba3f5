import { z } from "@hono/zod-openapi";
import { TimestampMs } from "../core/schemas";

const ANNOUNCEMENT_KINDS = ["maintenance", "incident", "info"] as const;
const SYSTEM_STATUSES = ["online", "maintenance", "degraded"] as const;
/** Announcements kept at once: each reaches every client, so their number and size are bounded. */
export const MAX_ANNOUNCEMENTS = 50;
export const MAX_TITLE_LENGTH = 200;
export const MAX_ANNOUNCED_MARKETS = 50;

export const AnnouncementSchema = z
  .object({
    id: z.string().openapi({ example: "ann_3f9c2a1b7d4e5f60" }),
    kind: z.enum(ANNOUNCEMENT_KINDS).openapi({ description: "maintenance makes the system status `maintenance` while it runs; an incident `degraded`" }),
    title: z.string().openapi({ example: "Database maintenance" }),
    startsAt: TimestampMs.openapi({ description: "When it begins (the moment it was made when not given)" }),
    endsAt: TimestampMs.nullable().openapi({ description: "When it ends; null: until it is changed or deleted" }),
    markets: z
      .array(z.string())
      .nullable()
      .openapi({ example: ["BTCUSDT"], description: "The markets it concerns; null: the whole venue" }),
    createdAt: TimestampMs,
    updatedAt: TimestampMs,
  })
  .openapi("Announcement");

const fields = {
  kind: z.enum(ANNOUNCEMENT_KINDS),
  title: z.string().trim().min(1).max(MAX_TITLE_LENGTH),
  startsAt: z.number().int().min(0).optional(),
  endsAt: z.number().int().min(0).nullable().optional(),
  markets: z.array(z.string().min(1).max(32)).min(1).max(MAX_ANNOUNCED_MARKETS).nullable().optional(),
};

export const AnnouncementInputSchema = z.object(fields).strict().openapi("AnnouncementInput");
export const AnnouncementPatchSchema = z
  .object({ ...fields, kind: fields.kind.optional(), title: fields.title.optional() })
  .strict()
  .openapi("AnnouncementPatch");

export const SystemStatusFields = {
  status: z.enum(SYSTEM_STATUSES).openapi({
    description: "maintenance while a maintenance announcement runs; degraded while an incident runs or a trading market's feed is stale; else online",
  }),
  announcements: z.array(AnnouncementSchema).openapi({ description: "Current and upcoming announcements, soonest first (ended ones leave)" }),
};

export type Announcement = z.infer<typeof AnnouncementSchema>;
export type AnnouncementInput = z.infer<typeof AnnouncementInputSchema>;
export type AnnouncementPatch = z.infer<typeof AnnouncementPatchSchema>;
export type SystemStatus = (typeof SYSTEM_STATUSES)[number];
