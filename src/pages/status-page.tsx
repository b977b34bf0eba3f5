/** @jsxImportSource hono/jsx */
import type { z } from "@hono/zod-openapi";
import type { Announcement } from "../announcements/schemas";
import type { StatusSchema } from "../market/schemas";
import type { StatusFigures } from "../metrics/venue-figures";
import { Page } from "./page";

export type VenueStatusBody = z.infer<typeof StatusSchema>;

/** The page reloads itself this often: readable and current without a script. */
export const STATUS_REFRESH_SECONDS = 15;

/** Seconds as milliseconds for people; a dash when nothing was measured. */
const ms = (seconds: number | null) => (seconds === null ? "–" : `${(seconds * 1000).toFixed(seconds < 0.01 ? 1 : 0)} ms`);

const utc = (time: number) => `${new Date(time).toISOString().slice(0, 16).replace("T", " ")} UTC`;

const HEADLINE: Record<VenueStatusBody["status"], string> = {
  online: "All systems online",
  maintenance: "Maintenance under way",
  degraded: "Degraded: an incident, or a market's feed is silent",
};

function AnnouncementRow({ announcement, now }: { announcement: Announcement; now: number }) {
  const running = announcement.startsAt <= now;
  return (
    <tr data-announcement={announcement.id}>
      <td>{announcement.kind}</td>
      <td>{announcement.title}</td>
      <td>{running ? `since ${utc(announcement.startsAt)}` : `from ${utc(announcement.startsAt)}`}</td>
      <td>{announcement.endsAt === null ? "until further notice" : `until ${utc(announcement.endsAt)}`}</td>
      <td>{announcement.markets?.join(", ") ?? "all markets"}</td>
    </tr>
  );
}

/**
 * `/status` (docs/operations.md#status-page): the system status, the current and upcoming
 * announcements and the markets by status, from the same answer as `GET /api/status`.
 */
export function StatusPage({ status, figures }: { status: VenueStatusBody; figures: StatusFigures | null }) {
  const now = status.serverTime;
  return (
    <Page title="Status" refreshSeconds={STATUS_REFRESH_SECONDS}>
      <h2 id="system-status" data-status={status.status}>
        {HEADLINE[status.status]}
      </h2>
      <p class="muted">
        As of {utc(now)}; this page reloads every {STATUS_REFRESH_SECONDS} s. Programs read the same from <code>GET /api/status</code> and the{" "}
        <code>status</code> stream.
      </p>
      <section>
        <h2>Announcements</h2>
        {status.announcements.length === 0 ? (
          <p id="announcements">None.</p>
        ) : (
          <table id="announcements">
            <tr>
              <th>kind</th>
              <th>title</th>
              <th>starts</th>
              <th>ends</th>
              <th>markets</th>
            </tr>
            {status.announcements.map((announcement) => (
              <AnnouncementRow announcement={announcement} now={now} />
            ))}
          </table>
        )}
      </section>
      <section>
        <h2>Streams and publishing</h2>
        {figures ? (
          <table id="stream-figures">
            <tr>
              <td>open stream connections</td>
              <td data-figure="connections">{figures.connections}</td>
            </tr>
            <tr>
              <td>stream delivery, last 5 minutes (market → subscriber's shard)</td>
              <td data-figure="delivery">
                p50 {ms(figures.deliveryP50)} · p99 {ms(figures.deliveryP99)}
              </td>
            </tr>
            <tr>
              <td>publish acknowledgement, last 5 minutes</td>
              <td data-figure="ack">p99 {ms(figures.ackP99)}</td>
            </tr>
          </table>
        ) : (
          <p id="stream-figures">These figures cannot be read just now.</p>
        )}
      </section>
      <section>
        <h2>Markets</h2>
        <table id="markets-by-status">
          <tr>
            <td>trading</td>
            <td>{status.trading}</td>
            <td></td>
          </tr>
          <tr>
            <td>stale (no update for {status.staleAfterMs / 1000} s)</td>
            <td>{status.stale}</td>
            <td>{status.staleMarkets.join(", ")}</td>
          </tr>
          <tr>
            <td>halted</td>
            <td>{status.halted}</td>
            <td>{status.haltedMarkets.join(", ")}</td>
          </tr>
        </table>
      </section>
    </Page>
  );
}
