import { describe, expect, it } from "vitest";
import { newAccount, signedCall } from "../support/accounts";
import { call } from "../support/http";

/** A form post as a browser without JavaScript sends it: urlencoded, same origin, no redirect following. */
function form(path: string, fields: Record<string, string | string[]>, cookie?: string): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) for (const v of ([] as string[]).concat(value)) body.append(name, v);
  return call(path, {
    method: "POST",
    redirect: "manual",
    body: body.toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: "http://service.test", ...(cookie ? { Cookie: cookie } : {}) },
  });
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;

describe("dashboard: API Management with plain HTML forms", () => {
  it("sign up → create a key (secret once) → list → confirm → revoke, all without JavaScript", async () => {
    const email = `forms-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const signUp = await form("/dashboard/signup", { email, password: "plain html forms 42" });
    expect([signUp.status, signUp.headers.get("Location")]).toEqual([303, "/dashboard"]);
    const cookie = signUp.headers.get("Set-Cookie")!.split(";")[0]!;

    const page = await (await call("/dashboard", { headers: { Cookie: cookie } })).text();
    expect(page).toContain("<h2>API Management</h2>");
    const csrf = csrfOf(page);

    const created = await form(
      "/dashboard/keys",
      { csrf, label: "forms key", permissions: ["read", "stream"], allowCidrs: "203.0.113.0/24\n2001:db8::/32", expiresAt: "2099-01-01T00:00" },
      cookie,
    );
    expect(created.status).toBe(201);
    const createdPage = await created.text();
    const secret = /id="secret-value">\s*([A-Za-z0-9_-]{43})\s*</.exec(createdPage)![1]!;
    const keyId = /data-key-id="(mk_[0-9a-f]{24})"/.exec(createdPage)![1]!;
    expect(createdPage).toContain("shown this once");
    expect(createdPage).toContain('id="copy-secret"');

    const again = await (await call("/dashboard", { headers: { Cookie: cookie } })).text();
    expect(again).toContain(keyId);
    expect(again).toContain("read, stream");
    expect(again).not.toContain(secret);

    expect((await signedCall({ id: keyId, secret }, "GET", "/v1/markets", { ip: "203.0.113.9" })).status).toBe(200);
    expect((await signedCall({ id: keyId, secret }, "GET", "/v1/markets", { ip: "198.51.100.9" })).status).toBe(403);

    const confirm = await (await call(`/dashboard/keys/${keyId}/revoke`, { headers: { Cookie: cookie } })).text();
    expect(confirm).toContain(`Revoke key ${keyId}?`);
    const revoked = await form(`/dashboard/keys/${keyId}/revoke`, { csrf }, cookie);
    expect(revoked.status).toBe(303);
    expect(await (await call("/dashboard", { headers: { Cookie: cookie } })).text()).toMatch(/<td class="status">revoked<\/td>/);
    expect((await signedCall({ id: keyId, secret }, "GET", "/v1/markets", { ip: "203.0.113.9" })).status).toBe(401);
  });

  it("a form with a bad allow-list or no permission is shown again with the reason, and creates nothing", async () => {
    const { cookie } = await newAccount();
    const csrf = csrfOf(await (await call("/dashboard", { headers: { Cookie: cookie } })).text());
    const badCidr = await form("/dashboard/keys", { csrf, label: "x", permissions: "read", allowCidrs: "10.0.0.0/33" }, cookie);
    expect(badCidr.status).toBe(400);
    expect(await badCidr.text()).toContain("CIDR");
    const noPermission = await form("/dashboard/keys", { csrf, label: "x" }, cookie);
    expect(noPermission.status).toBe(400);
    expect(await (await call("/dashboard", { headers: { Cookie: cookie } })).text()).toContain("No keys yet.");
  });

  it("labels are escaped, never markup", async () => {
    const { cookie } = await newAccount();
    const csrf = csrfOf(await (await call("/dashboard", { headers: { Cookie: cookie } })).text());
    const created = await form("/dashboard/keys", { csrf, label: "<img src=x onerror=alert(1)>", permissions: "read" }, cookie);
    const html = await created.text();
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
  });

  it("a wrong password shows the sign-in page again; a form from another site is refused", async () => {
    const { email } = await newAccount();
    const wrong = await form("/dashboard/login", { email, password: "not the right one" });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain("wrong email or password");
    const cross = await call("/dashboard/login", {
      method: "POST",
      body: new URLSearchParams({ email, password: "whatever it is" }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: "https://evil.example" },
    });
    expect(cross.status).toBe(403);
  });
});
