import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { randomBase64Url, sha256Hex } from "../core/encoding";
import { problem } from "../core/problem";
import type { AppEnv } from "../http/env";

const SESSION_COOKIE = "mds_session";
const SESSION_TTL_MS = 12 * 3_600_000;

export interface Session {
  accountId: string;
  email: string;
  csrfToken: string;
  expiresAt: number;
}

/** Sessions are stored by hash: a leaked table grants no sign-in. */
const hashId = (id: string) => sha256Hex(id);

export async function startSession(c: Context<AppEnv>, accountId: string, now = Date.now()): Promise<void> {
  const id = randomBase64Url(32);
  await c.env.DB.prepare("INSERT INTO sessions (id_hash, account_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
    .bind(await hashId(id), accountId, randomBase64Url(24), now, now + SESSION_TTL_MS)
    .run();
  setCookie(c, SESSION_COOKIE, id, { httpOnly: true, secure: true, sameSite: "Lax", path: "/", maxAge: SESSION_TTL_MS / 1000 });
}

export async function currentSession(c: Context<AppEnv>, now = Date.now()): Promise<Session | null> {
  const id = getCookie(c, SESSION_COOKIE);
  if (!id || id.length > 128) return null;
  const row = await c.env.DB.prepare(
    "SELECT s.account_id, s.csrf_token, s.expires_at, a.email FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.id_hash = ?",
  )
    .bind(await hashId(id))
    .first<{ account_id: string; csrf_token: string; expires_at: number; email: string }>();
  if (!row || row.expires_at <= now) return null;
  return { accountId: row.account_id, email: row.email, csrfToken: row.csrf_token, expiresAt: row.expires_at };
}

export async function requireSession(c: Context<AppEnv>): Promise<Session> {
  const session = await currentSession(c);
  if (!session) throw problem("UNAUTHENTICATED", "sign in first: POST /account/login sets the session cookie");
  return session;
}

export async function endSession(c: Context<AppEnv>): Promise<void> {
  const id = getCookie(c, SESSION_COOKIE);
  if (id && id.length <= 128)
    await c.env.DB.prepare("DELETE FROM sessions WHERE id_hash = ?")
      .bind(await hashId(id))
      .run();
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: true });
}

/**
 * CSRF protection for state changes: a browser's request must come from this origin
 * (`Origin`, else `Sec-Fetch-Site`). Requests with neither come from non-browser clients,
 * which cannot be made to carry a victim's cookie cross-site.
 */
export function requireSameOrigin(c: Context<AppEnv>): void {
  const origin = c.req.header("Origin");
  if (origin !== undefined) {
    // The whole origin (scheme, host and port): https://host is another origin than http://host.
    if (origin !== new URL(c.req.url).origin)
      throw problem("PERMISSION_DENIED", "cross-site request refused (CSRF protection): the Origin is not this service");
    return;
  }
  const site = c.req.header("Sec-Fetch-Site");
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    throw problem("PERMISSION_DENIED", "cross-site request refused (CSRF protection)");
  }
}

/** Forms also carry the session's CSRF token (double protection for cookie-authenticated posts). */
export function requireCsrfToken(session: Session, token: unknown): void {
  if (typeof token !== "string" || token !== session.csrfToken)
    throw problem("PERMISSION_DENIED", "the form's CSRF token is missing or stale; reload the page");
}
