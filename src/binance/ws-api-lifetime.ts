import type { Context } from "hono";
import { maintenanceNotices } from "../announcements/model";
import type { Announcement } from "../announcements/schemas";
import { msSetting } from "../core/settings";
import type { AppEnv } from "../http/env";
import { readVenue } from "../reads/edge-reads";
import { readContext } from "../reads/reads";
import { MAINTENANCE_NOTICE_LEAD_MS } from "../streams/protocol";

/** A WebSocket API connection lasts this long at most, as Binance's (24 h), then closes 1000. */
const WS_API_MAX_AGE_MS = 86_400_000;
/** How often a connection reads the venue's status (its edge copy) for a maintenance to tell of. */
const WS_API_STATUS_EVERY_MS = 20_000;

/** Binance's WebSocket API event: `{"event": {"e": "serverShutdown", "E": …}}`. */
function serverShutdownEvent(now: number): string {
  return JSON.stringify({ event: { e: "serverShutdown", E: now } });
}

/**
 * The WebSocket API connection's life as Binance lives it (docs/binance.md#websocket-api): closed
 * with 1000 at 24 h (`WS_API_MAX_AGE_MS`, a setting of the same name), and told `serverShutdown`
 * once per maintenance, `MAINTENANCE_NOTICE_LEAD_MS` before it starts: the connection reads the
 * venue's status every `WS_API_STATUS_EVERY_MS` from the edge copy `GET /api/status` reads (no
 * object call while the copy is fresh). Both timers end with the connection.
 *
 * @example
 * const stop = wsApiLifetime(c, server, (text) => server.send(text));
 * server.addEventListener("close", stop);
 */
export function wsApiLifetime(c: Context<AppEnv>, server: WebSocket, send: (text: string) => void): () => void {
  const maxAgeMs = msSetting(c.env.WS_API_MAX_AGE_MS, WS_API_MAX_AGE_MS);
  const everyMs = msSetting(c.env.WS_API_STATUS_EVERY_MS, WS_API_STATUS_EVERY_MS);
  const read = readContext(c);
  let noticed = new Set<string>();
  const checkStatus = async () => {
    try {
      const status = JSON.parse((await readVenue(read, "status")).text) as { announcements?: Announcement[] };
      const now = Date.now();
      const notices = maintenanceNotices(status.announcements ?? [], noticed, now, MAINTENANCE_NOTICE_LEAD_MS);
      noticed = notices.noticed;
      if (notices.due.length > 0) send(serverShutdownEvent(now));
    } catch {
      // The status could not be read now: the next turn reads it again.
    }
  };
  void checkStatus();
  const status = setInterval(() => void checkStatus(), everyMs);
  const end = setTimeout(() => {
    try {
      server.close(1000, "a WebSocket API connection lasts at most 24 hours; reconnect");
    } catch {
      // already closed
    }
  }, maxAgeMs);
  return () => {
    clearInterval(status);
    clearTimeout(end);
  };
}
