/**
 * Closes the service plans (docs/streams.md#closes-and-ended-streams), pure: which code and
 * reason each kind carries, and the notice a connection gets before it. The StreamHub sends the
 * notice at once and closes when the grace has run out (its alarm).
 */

/** RFC 6455 "going away": the shard goes away (drained before maintenance); reconnect. */
export const GOING_AWAY = 1001;
/** RFC 6455 "service restart": the service restarts; reconnect after the grace. */
export const SERVICE_RESTART = 1012;
/** Longest notice an operator may give: a connection is never told to wait longer. */
export const MAX_GRACE_SECONDS = 600;

export const CLOSE_KINDS = ["restart", "going-away"] as const;
export type CloseKind = (typeof CLOSE_KINDS)[number];

export interface PlannedClose {
  code: number;
  reason: string;
  /** When the shard closes its connections (epoch ms). */
  closeAt: number;
}

/** The code and the reason (well under the 123 bytes a close frame carries) of a kind of close. */
export function plannedClose(kind: CloseKind, closeAt: number): PlannedClose {
  return kind === "restart"
    ? { code: SERVICE_RESTART, reason: "the service restarts; reconnect", closeAt }
    : { code: GOING_AWAY, reason: "this stream shard goes away; reconnect", closeAt };
}

/** What a native connection is told first: `{"op":"closing","code","reason","closeAt"}` (a dialect says it in its own words). */
export function closingNotice(close: PlannedClose): string {
  return JSON.stringify({ op: "closing", code: close.code, reason: close.reason, closeAt: close.closeAt });
}
