/** @jsxImportSource hono/jsx */
import type { z } from "@hono/zod-openapi";
import { isRunning } from "../announcements/model";
import type { Announcement } from "../announcements/schemas";
import type { StatusSchema } from "../market/schemas";
import type { StatusFigures } from "../metrics/venue-figures";
import { HeaderRow } from "./document";
import { Page } from "./page";

export type VenueStatusBody = z.infer<typeof StatusSchema>;

/** The page reloads itself this often: readable and current without a script. */
const STATUS_REFRESH_SECONDS = 15;

/** Seconds as milliseconds for people; a dash when nothing was measured. */
const ms = (seconds: number | null) => (seconds === null ? "–" : `${(seconds * 1000).toFixed(seconds < 0.01 ? 1 : 0)} ms`);

const utc = (time: number) => `${new Date(time).toISOString().slice(0, 16).replace("T", " ")} UTC`;

/** At most this many markets are named a kind (silent, halted); `GET /api/status` names them all. */
export const MOST_NAMED = 100;

const count = (n: number) => n.toLocaleString("en");

/** How long ago, for people: "3 min", "2 h 5 min", "4 d". */
function ago(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  return `${Math.floor(minutes / 1440)} d`;
}

/** The headline says why: the running maintenance or incidents, and how many feeds are silent. */
export function headline(status: VenueStatusBody): string {
  const running = status.announcements.filter((a) => isRunning(a, status.serverTime));
  if (status.status === "maintenance") {
    return `Maintenance under way: ${running
      .filter((a) => a.kind === "maintenance")
      .map((a) => a.title)
      .join("; ")}`;
  }
  if (status.status === "online") return "All systems online";
  const reasons = running.filter((a) => a.kind === "incident").map((a) => `incident: ${a.title}`);
  if (status.stale > 0) reasons.push(`${count(status.stale)} of ${count(status.trading)} trading markets' feeds are silent`);
  return `Degraded: ${reasons.join("; ")}`;
}

/** Natural order of symbols: V2USDT before V10USDT. */
const bySymbol = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });

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
 * `/status` (docs/operations.md#status-page): the reason first (the headline names the incident or
 * how many feeds are silent), then the exceptions — silent markets with since when, halted ones —
 * the rest counted, then announcements and the streams' figures. From the same answers as
 * `GET /api/status` and `GET /api/markets` (the markets' last update times).
 */
export function StatusPage({
  status,
  lastUpdates,
  figures,
}: {
  status: VenueStatusBody;
  lastUpdates: ReadonlyMap<string, number | null>;
  figures: StatusFigures | null;
}) {
  return (
    <Page title="Status" refreshSeconds={STATUS_REFRESH_SECONDS}>
      <h2 id="system-status" data-status={status.status}>
        {headline(status)}
      </h2>
      <p class="muted">
        As of {utc(status.serverTime)}; this page reloads every {STATUS_REFRESH_SECONDS} s. Programs read the same from <code>GET /api/status</code> and the{" "}
        <code>status</code> stream.
      </p>
      <MarketExceptions status={status} lastUpdates={lastUpdates} />
      <section>
        <h2>Announcements</h2>
        {status.announcements.length === 0 ? (
          <p id="announcements">None.</p>
        ) : (
          <table id="announcements">
            <HeaderRow names={["kind", "title", "starts", "ends", "markets"]} />
            {status.announcements.map((announcement) => (
              <AnnouncementRow announcement={announcement} now={status.serverTime} />
            ))}
          </table>
        )}
      </section>
      <section>
        <h2>Streams and publishing</h2>
        {figures ? <StreamFigures figures={figures} /> : <p id="stream-figures">These figures cannot be read just now.</p>}
      </section>
    </Page>
  );
}

/** Up to MOST_NAMED of `names`, then how many more (with `rest`, where the others are found). */
function named(names: readonly string[], rest = ""): string {
  const more = names.length > MOST_NAMED ? ` … and ${count(names.length - MOST_NAMED)} more${rest}` : "";
  return names.slice(0, MOST_NAMED).join(", ") + more;
}

/** The markets' exceptions: silent feeds (the most recently silent first), never-updated and halted markets; the rest counted. */
function MarketExceptions({ status, lastUpdates }: { status: VenueStatusBody; lastUpdates: ReadonlyMap<string, number | null> }) {
  const now = status.serverTime;
  const wentSilent = status.staleMarkets
    .filter((m) => (lastUpdates.get(m) ?? null) !== null)
    .sort((a, b) => lastUpdates.get(b)! - lastUpdates.get(a)! || bySymbol(a, b));
  const neverUpdated = status.staleMarkets.filter((m) => (lastUpdates.get(m) ?? null) === null).sort(bySymbol);
  return (
    <section id="market-exceptions">
      <h2>Markets</h2>
      {wentSilent.length > 0 && (
        <>
          <h3>
            Feeds gone silent: {count(wentSilent.length)} (no update for more than {status.staleAfterMs / 1000} s)
          </h3>
          <table id="silent-markets">
            {wentSilent.slice(0, MOST_NAMED).map((symbol) => (
              <tr data-silent={symbol}>
                <td>
                  <a href={`/markets/${symbol}`}>{symbol}</a>
                </td>
                <td>
                  silent since {utc(lastUpdates.get(symbol)!)} ({ago(now - lastUpdates.get(symbol)!)})
                </td>
              </tr>
            ))}
          </table>
          {wentSilent.length > MOST_NAMED && (
            <p id="silent-more">
              … and {count(wentSilent.length - MOST_NAMED)} more; <code>GET /api/markets</code> has each one's last update.
            </p>
          )}
        </>
      )}
      {neverUpdated.length > 0 && (
        <>
          <h3>No update since they were listed: {count(neverUpdated.length)}</h3>
          <p id="never-updated">{named(neverUpdated, " (GET /api/status names them all)")}</p>
        </>
      )}
      {status.halted > 0 && (
        <>
          <h3>Halted by the operator: {count(status.halted)}</h3>
          <p id="halted-markets">{named([...status.haltedMarkets].sort(bySymbol))}</p>
        </>
      )}
      <p id="markets-normal">
        {status.stale === 0 && status.halted === 0 ? "All " : "The other "}
        <span data-figure="trading-normally">{count(status.trading - status.stale)}</span> markets are trading normally.
      </p>
    </section>
  );
}

/** A figure's row: what it is, and its value (`none` for an empty list). */
function FigureRow({ what, figure, children }: { what: string; figure: string; children: unknown }) {
  return (
    <tr>
      <td>{what}</td>
      <td data-figure={figure}>{children === "" ? "none" : children}</td>
    </tr>
  );
}

/** The streams' and publishing's figures of the last 5 minutes (docs/operations.md#status-page). */
function StreamFigures({ figures }: { figures: StatusFigures }) {
  return (
    <table id="stream-figures">
      <FigureRow what="open stream connections" figure="connections">
        {figures.connections}
      </FigureRow>
      <FigureRow what="stream delivery, last 5 minutes (market → subscriber's shard)" figure="delivery">
        p50 {ms(figures.deliveryP50)} · p99 {ms(figures.deliveryP99)}
      </FigureRow>
      <FigureRow what="publish acknowledgement, last 5 minutes" figure="ack">
        p99 {ms(figures.ackP99)}
      </FigureRow>
      <FigureRow what="markets failing in their host, last 5 minutes (each held alone; its batches answered 503)" figure="market-failures">
        {Object.entries(figures.marketFailures)
          .map(([symbol, n]) => `${symbol} (${n})`)
          .join(", ")}
      </FigureRow>
      <FigureRow what="market hosts past 80 % of their 10 GB, last 5 minutes (past 98 % a host takes no batches)" figure="storage-warnings">
        {Object.entries(figures.storageWarnings)
          .map(([group, level]) => `group ${group} (${level === "98" ? "full: taking no batches" : "past 80 %"})`)
          .join(", ")}
      </FigureRow>
      <FigureRow what="history files failing (each hour built apart and retried; the newest first)" figure="failing-files">
        {figures.failingFiles
          .slice(0, 10)
          .map((f) => `${f.id} since ${new Date(f.at).toISOString().slice(0, 16)}Z: ${f.error}`)
          .join("; ")}
      </FigureRow>
    </table>
  );
}
