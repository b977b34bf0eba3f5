/**
 * Announcements and the system status they make (docs/operations.md#announcements), pure: which
 * are current or upcoming, the status at a moment, and when it next changes. The price index
 * holds them; the shards push them.
 */
import { type Announcement, type AnnouncementInput, type AnnouncementPatch, MAX_ANNOUNCEMENTS, type SystemStatus } from "./schemas";

export function isRunning(announcement: Announcement, now: number): boolean {
  return announcement.startsAt <= now && (announcement.endsAt === null || now < announcement.endsAt);
}

/** Current and upcoming ones, soonest first: an ended announcement is no longer shown. */
export function visible(announcements: readonly Announcement[], now: number): Announcement[] {
  return announcements.filter((a) => a.endsAt === null || now < a.endsAt).sort((a, b) => a.startsAt - b.startsAt || a.id.localeCompare(b.id));
}

/** `maintenance` while one runs, `degraded` while an incident runs or a feed is stale, else `online`. */
export function systemStatus(announcements: readonly Announcement[], staleMarkets: number, now: number): SystemStatus {
  const running = announcements.filter((a) => isRunning(a, now));
  if (running.some((a) => a.kind === "maintenance")) return "maintenance";
  if (running.some((a) => a.kind === "incident") || staleMarkets > 0) return "degraded";
  return "online";
}

/** The next moment after `now` an announcement starts or ends (the status may change then), or undefined. */
export function nextChange(announcements: readonly Announcement[], now: number): number | undefined {
  const times = announcements.flatMap((a) => [a.startsAt, a.endsAt ?? Number.POSITIVE_INFINITY]).filter((t) => t > now && Number.isFinite(t));
  return times.length === 0 ? undefined : Math.min(...times);
}

/**
 * The maintenances to tell a connection of at `now`: those within `leadMs` of their start (or
 * running) and not told yet (`noticed`); `noticed` narrowed to the current ones plus the due, to
 * keep; and when the next notice falls due, if one waits.
 */
export function maintenanceNotices(
  announcements: readonly Announcement[],
  noticed: ReadonlySet<string>,
  now: number,
  leadMs: number,
): { due: Announcement[]; noticed: Set<string>; next: number | undefined } {
  const maintenances = announcements.filter((a) => a.kind === "maintenance" && (a.endsAt === null || now < a.endsAt));
  const kept = new Set([...noticed].filter((id) => maintenances.some((a) => a.id === id)));
  const due: Announcement[] = [];
  let next: number | undefined;
  for (const maintenance of maintenances) {
    if (kept.has(maintenance.id)) continue;
    const noticeAt = maintenance.startsAt - leadMs;
    if (noticeAt > now) next = Math.min(next ?? noticeAt, noticeAt);
    else {
      due.push(maintenance);
      kept.add(maintenance.id);
    }
  }
  return { due, noticed: kept, next };
}

/** A checked change, or why it is refused: too many kept (409), or a field that does not fit (400). */
export type Checked<T> = { ok: true; value: T } | { ok: false; code: "TOO_MANY_ANNOUNCEMENTS" | "VALIDATION_FAILED"; path: string; message: string };

/** A new announcement, checked against the rest (`id` and `now` from the caller). */
export function createAnnouncement(held: readonly Announcement[], input: AnnouncementInput, id: string, now: number): Checked<Announcement> {
  if (held.length >= MAX_ANNOUNCEMENTS)
    return { ok: false, code: "TOO_MANY_ANNOUNCEMENTS", path: "", message: `at most ${MAX_ANNOUNCEMENTS} announcements are kept: delete one that ended first` };
  return checked({
    id,
    kind: input.kind,
    title: input.title,
    startsAt: input.startsAt ?? now,
    endsAt: input.endsAt ?? null,
    markets: input.markets ?? null,
    createdAt: now,
    updatedAt: now,
  });
}

export function patchAnnouncement(announcement: Announcement, patch: AnnouncementPatch, now: number): Checked<Announcement> {
  return checked({
    ...announcement,
    ...Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)),
    updatedAt: now,
  });
}

function checked(announcement: Announcement): Checked<Announcement> {
  if (announcement.endsAt !== null && announcement.endsAt <= announcement.startsAt)
    return { ok: false, code: "VALIDATION_FAILED", path: "endsAt", message: "endsAt must be after startsAt" };
  return { ok: true, value: announcement };
}
