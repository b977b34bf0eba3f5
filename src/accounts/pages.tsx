/** @jsxImportSource hono/jsx */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import type { Child } from "hono/jsx";
import { clientIp } from "../access/client-address";
import { ACCOUNT_PERMISSIONS, type Permission } from "../access/keys";
import { readForm } from "../core/forms";
import { ProblemError } from "../core/problem";
import type { AppEnv } from "../http/env";
import { HeaderRow, HtmlDocument } from "../pages/document";
import { ASSETS } from "../pages/generated/assets";
import { NewKeySchema } from "./schemas";
import { type ApiKeyView, createApiKey, listApiKeys, revokeApiKey, signIn, signUp } from "./service";
import { currentSession, endSession, requireCsrfToken, requireSameOrigin, type Session, startSession } from "./sessions";

/**
 * The dashboard: server-rendered, no CDN, every form works without JavaScript. Its section
 * "API Management" creates, lists and revokes keys through the same service as the JSON API.
 */

function Layout(props: { title: string; children: Child; session?: Session | null }) {
  return (
    <HtmlDocument title={props.title} stylesheet={ASSETS["dashboard.css"]}>
      <h1>
        <a href="/dashboard">Market Data Service — Dashboard</a>
      </h1>
      <nav class="muted">
        <a href="/">Markets</a> · <a href="/docs">API reference</a>
        {props.session ? (
          <>
            {" "}
            · signed in as {props.session.email}{" "}
            <form method="post" action="/dashboard/logout" style="display:inline">
              <input type="hidden" name="csrf" value={props.session.csrfToken} />
              <button type="submit">Sign out</button>
            </form>
          </>
        ) : null}
      </nav>
      {props.children}
    </HtmlDocument>
  );
}

function SignInPage(props: { error?: string }) {
  return (
    <Layout title="Sign in">
      {props.error ? <p class="error">{props.error}</p> : null}
      <div class="grid">
        <section>
          <h2>Sign in</h2>
          <form method="post" action="/dashboard/login">
            <label>
              Email <input type="email" name="email" required autocomplete="username" />
            </label>
            <label>
              Password <input type="password" name="password" required autocomplete="current-password" />
            </label>
            <button class="primary" type="submit">
              Sign in
            </button>
          </form>
        </section>
        <section>
          <h2>Create an account</h2>
          <form method="post" action="/dashboard/signup">
            <label>
              Email <input type="email" name="email" required autocomplete="username" />
            </label>
            <label>
              Password (10–128 characters) <input type="password" name="password" required minlength={10} maxlength={128} autocomplete="new-password" />
            </label>
            <button class="primary" type="submit">
              Sign up
            </button>
          </form>
        </section>
      </div>
    </Layout>
  );
}

const formatTime = (ms: number | null) => (ms === null ? "—" : `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC`);

/** A new key's secret, shown this once, with its copy button. */
function NewSecret({ created }: { created: ApiKeyView & { secret: string } }) {
  return (
    <div id="new-secret">
      <p class="warning">
        Copy the secret of key <code>{created.id}</code> now: it is shown this once and cannot be retrieved again.
      </p>
      <p class="secret" id="secret-value">
        {created.secret}
      </p>
      <button type="button" id="copy-secret" data-secret={created.secret}>
        Copy secret
      </button>
    </div>
  );
}

function CreateKeyForm({ csrfToken }: { csrfToken: string }) {
  return (
    <form method="post" action="/dashboard/keys">
      <input type="hidden" name="csrf" value={csrfToken} />
      <label>
        Label <input type="text" name="label" required maxlength={64} />
      </label>
      <fieldset>
        <legend>Permissions</legend>
        {ACCOUNT_PERMISSIONS.map((p) => (
          <label style="display:inline-block;margin-right:1rem">
            <input type="checkbox" name="permissions" value={p} checked={p === "read"} /> {p}
          </label>
        ))}
        <p class="hint">Publishing market data takes a publishing key, which the venue's operator issues.</p>
      </fieldset>
      <label>
        IP allow-list (optional; one IPv4/IPv6 address or CIDR per line) <textarea name="allowCidrs" rows={2} placeholder="203.0.113.0/24"></textarea>
      </label>
      <label>
        Expires (optional, UTC) <input type="datetime-local" name="expiresAt" />
      </label>
      <button class="primary" type="submit">
        Create key
      </button>
    </form>
  );
}

/** The account's keys, never their secrets; an active one links to its revoke confirmation. */
function KeyTable({ keys }: { keys: ApiKeyView[] }) {
  if (keys.length === 0) return <p class="muted">No keys yet.</p>;
  return (
    <table id="keys">
      <HeaderRow names={["id", "label", "permissions", "created", "last used", "status", ""]} />
      {keys.map((key) => (
        <tr data-key-id={key.id}>
          <td>
            <code>{key.id}</code>
          </td>
          <td>{key.label}</td>
          <td>{key.permissions.join(", ")}</td>
          <td>{formatTime(key.createdAt)}</td>
          <td>{formatTime(key.lastUsedAt)}</td>
          <td class="status">{key.status}</td>
          <td>
            {key.status === "active" ? (
              <a href={`/dashboard/keys/${key.id}/revoke`} class="revoke">
                Revoke…
              </a>
            ) : null}
          </td>
        </tr>
      ))}
    </table>
  );
}

/**
 * Each key's usage as a chart (requests and 429s per minute or hour), drawn by the page's script
 * from `GET /account/api-keys/{id}/usage` with the same charting library as the market page.
 */
function KeyUsage({ keys }: { keys: ApiKeyView[] }) {
  return (
    <section id="usage">
      <h3>Usage</h3>
      <p>
        <select id="usage-key" aria-label="Key">
          {keys.map((key) => (
            <option value={key.id}>
              {key.label} ({key.id})
            </option>
          ))}
        </select>{" "}
        <select id="usage-interval" aria-label="Interval">
          <option value="1m">per minute, last 24 h</option>
          <option value="1h">per hour, last 30 days</option>
        </select>
      </p>
      <div id="usage-chart" class="chart"></div>
      <p id="usage-summary" class="muted">
        Requests and 429s of the key, counted by the service as it admits them.
      </p>
    </section>
  );
}

function ApiManagementPage(props: { session: Session; keys: ApiKeyView[]; created?: ApiKeyView & { secret: string }; error?: string }) {
  return (
    <Layout title="API Management" session={props.session}>
      <section id="api-management">
        <h2>API Management</h2>
        {props.error ? <p class="error">{props.error}</p> : null}
        {props.created ? <NewSecret created={props.created} /> : null}
        <h3>Create a key</h3>
        <CreateKeyForm csrfToken={props.session.csrfToken} />
        <h3>Your keys</h3>
        <KeyTable keys={props.keys} />
        {props.keys.length > 0 ? <KeyUsage keys={props.keys} /> : null}
      </section>
      <script src={ASSETS["dashboard.js"]} defer></script>
    </Layout>
  );
}

function ConfirmRevokePage(props: { session: Session; keyId: string }) {
  return (
    <Layout title="Revoke key" session={props.session}>
      <section>
        <h2>Revoke key {props.keyId}?</h2>
        <p>Every request signed with this key will be refused from the next one on. This cannot be undone.</p>
        <form method="post" action={`/dashboard/keys/${props.keyId}/revoke`}>
          <input type="hidden" name="csrf" value={props.session.csrfToken} />
          <button class="danger" type="submit" id="confirm-revoke">
            Revoke key
          </button>{" "}
          <a href="/dashboard">Cancel</a>
        </form>
      </section>
    </Layout>
  );
}

async function managementPage(
  c: Context<AppEnv>,
  session: Session,
  extra: { created?: ApiKeyView & { secret: string }; error?: string } = {},
  status: 200 | 201 | 400 = 200,
) {
  const keys = await listApiKeys(c.env, session.accountId);
  return c.html(<ApiManagementPage session={session} keys={keys} {...extra} />, status);
}

/** Form failures are shown on the page they came from rather than as problem JSON. */
function messageOf(error: unknown): string {
  if (error instanceof ProblemError) {
    const first = error.extras.errors?.[0];
    return first ? `${error.message} (${first.path.replace(/^body\./, "")}: ${first.message})` : error.message;
  }
  throw error;
}

function formString(form: Record<string, unknown>, name: string): string {
  const value = form[name];
  return typeof value === "string" ? value : "";
}

/**
 * Sign-up and sign-in from their forms: a session on success, the sign-in page with the reason
 * otherwise (a form's failure is shown where the person is, not as problem JSON).
 */
async function enterWithForm(c: Context<AppEnv>, enter: (email: string, password: string) => Promise<{ id: string }>) {
  requireSameOrigin(c);
  const form = await readForm(c);
  try {
    const account = await enter(formString(form, "email"), formString(form, "password"));
    await startSession(c, account.id);
    return c.redirect("/dashboard", 303);
  } catch (error) {
    return c.html(<SignInPage error={messageOf(error)} />, 400);
  }
}

/**
 * The dashboard, mounted at `/dashboard`. Its forms are the account API in HTML, so each form
 * post has `limit` in front of it, as the account API has; showing a page does not.
 *
 * @example
 * app.route("/dashboard", dashboardRoutes(publicLimit));
 */
export const dashboardRoutes = (limit: MiddlewareHandler<AppEnv>) =>
  new Hono<AppEnv>()
    .get("/", async (c) => {
      const session = await currentSession(c);
      return session ? managementPage(c, session) : c.html(<SignInPage />);
    })
    .post("/signup", limit, async (c) => {
      return enterWithForm(c, (email, password) => signUp(c.env, email, password));
    })
    .post("/login", limit, async (c) => {
      return enterWithForm(c, (email, password) => signIn(c.env, email, password, clientIp(c.req.raw)));
    })
    .post("/logout", limit, async (c) => {
      requireSameOrigin(c);
      const session = await currentSession(c);
      if (session) requireCsrfToken(session, (await readForm(c)).csrf);
      await endSession(c);
      return c.redirect("/dashboard", 303);
    })
    .post("/keys", limit, async (c) => {
      requireSameOrigin(c);
      const session = await currentSession(c);
      if (!session) return c.redirect("/dashboard", 303);
      const form = await readForm(c, { all: true });
      requireCsrfToken(session, form.csrf);
      const permissions = ([] as unknown[]).concat(form.permissions ?? []).filter((p): p is Permission => typeof p === "string");
      const expires = formString(form, "expiresAt");
      const parsed = NewKeySchema.safeParse({
        label: formString(form, "label"),
        permissions,
        allowCidrs: formString(form, "allowCidrs")
          .split(/[\s,]+/)
          .filter(Boolean),
        expiresAt: expires ? Date.parse(`${expires}Z`) || -1 : null,
      });
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return managementPage(c, session, { error: `${issue.path.join(".")}: ${issue.message}` }, 400);
      }
      try {
        return await managementPage(c, session, { created: await createApiKey(c.env, session.accountId, parsed.data) }, 201);
      } catch (error) {
        return managementPage(c, session, { error: messageOf(error) }, 400);
      }
    })
    .get("/keys/:id/revoke", async (c) => {
      const session = await currentSession(c);
      if (!session) return c.redirect("/dashboard", 303);
      return c.html(<ConfirmRevokePage session={session} keyId={c.req.param("id").slice(0, 64)} />);
    })
    .post("/keys/:id/revoke", limit, async (c) => {
      requireSameOrigin(c);
      const session = await currentSession(c);
      if (!session) return c.redirect("/dashboard", 303);
      requireCsrfToken(session, (await readForm(c)).csrf);
      try {
        await revokeApiKey(c.env, session.accountId, c.req.param("id"));
        return c.redirect("/dashboard", 303);
      } catch (error) {
        return managementPage(c, session, { error: messageOf(error) }, 400);
      }
    });
