import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { canonicalIp } from "../../src/access/client-address";
import { signIn } from "../../src/accounts/service";
import { newAccount, newKey } from "../support/accounts";
import { call, callJson } from "../support/http";

const json = (body: unknown, extra: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "Content-Type": "application/json", ...extra },
  body: JSON.stringify(body),
});

describe("accounts (docs/signing.md)", () => {
  it("sign-up stores a PBKDF2 hash, never the password, and sets a Secure HttpOnly SameSite=Lax cookie", async () => {
    const response = await call("/account/signup", json({ email: "Ada@Example.com", password: "analytical engine 1843" }));
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ email: "ada@example.com" });
    const cookie = response.headers.get("Set-Cookie")!;
    expect(cookie).toMatch(/mds_session=/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/SameSite=Lax/);
    const row = await env.DB.prepare("SELECT * FROM accounts WHERE email = ?").bind("ada@example.com").first<Record<string, string>>();
    expect(JSON.stringify(row)).not.toContain("analytical engine 1843");
    expect(row!.password_salt).toHaveLength(24); // 16 bytes, base64
  });

  it("a duplicate email, a weak password and an oversized one are refused with 400", async () => {
    await call("/account/signup", json({ email: "dup@example.com", password: "first password 1" }));
    const duplicate = await callJson("/account/signup", json({ email: "DUP@example.com", password: "second password 2" }));
    expect([duplicate.status, duplicate.body.code]).toEqual([400, "VALIDATION_FAILED"]);
    for (const password of ["short", "aaaaaaaaaaaaaaaa", "password123", "x".repeat(129)]) {
      const weak = await callJson("/account/signup", json({ email: `weak${password.length}@example.com`, password }));
      expect([weak.status, weak.body.code], password).toEqual([400, "VALIDATION_FAILED"]);
    }
    const notEmail = await callJson("/account/signup", json({ email: "nope", password: "good password 9" }));
    expect(notEmail.body.errors[0].path).toBe("body.email");
  });

  it("a wrong password is 401; five failures throttle the account with 429 even for the right password", async () => {
    const { email, password } = await newAccount();
    const ip = "192.0.2.77";
    const wrong = await callJson("/account/login", { ...json({ email, password: "not the password" }), ip } as RequestInit & { ip: string });
    expect([wrong.status, wrong.body.code]).toEqual([401, "UNAUTHENTICATED"]);
    for (let i = 0; i < 4; i++) await call("/account/login", { ...json({ email, password: "still wrong pw" }), ip: `192.0.2.${80 + i}` });
    const throttled = await call("/account/login", { ...json({ email, password }), ip: "192.0.2.99" });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(((await throttled.json()) as { code: string }).code).toBe("RATE_LIMITED");
  });

  it("40 concurrent wrong passwords on one account: at most 5 are checked, the rest are refused before any check", async () => {
    const { email } = await newAccount();
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call("/account/login", { ...json({ email, password: `wrong password ${i}` }), ip: `192.0.2.${100 + i}` })),
    );
    const statuses = responses.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 401),
      "password checks (401)",
    ).toHaveLength(5);
    expect(
      statuses.filter((s) => s === 429),
      "refused before a check (429)",
    ).toHaveLength(35);
  });

  it("a correct password in a concurrent batch past the limit is refused", async () => {
    const { email, password } = await newAccount();
    const attempts = Array.from({ length: 30 }, (_, i) => (i === 25 ? password : `wrong password ${i}`));
    const responses = await Promise.all(attempts.map((attempt, i) => call("/account/login", { ...json({ email, password: attempt }), ip: `198.18.7.${i}` })));
    expect(responses[25]!.status, "the right password, 26th of 30").toBe(429);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(0);
  });

  it("per client address: 20 failures, then no check at all, however many arrive at once and however the address is spelled", async () => {
    const ip = "192.0.2.150";
    for (let i = 0; i < 15; i++) await expect(signIn(env, `nobody${i}@example.com`, "whatever pass", ip)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    // Ten at once after fifteen failures: five more checks, five refusals, also through other spellings.
    const spellings = ["192.0.2.150", "::ffff:192.0.2.150", "192.000.002.150", "::ffff:c000:296", "192.0.2.150:443"];
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        signIn(env, `other${i}@example.com`, "whatever pass", canonicalIp(spellings[i % spellings.length])!).catch((error) => error.code as string),
      ),
    );
    expect(
      outcomes.filter((o) => o === "UNAUTHENTICATED"),
      "checked",
    ).toHaveLength(5);
    expect(
      outcomes.filter((o) => o === "RATE_LIMITED"),
      "refused",
    ).toHaveLength(5);
  });

  it("state changes from another origin are refused (CSRF)", async () => {
    const { cookie } = await newAccount();
    const cross = await callJson("/account/api-keys", json({ label: "x", permissions: ["read"] }, { Cookie: cookie, Origin: "https://evil.example" }));
    expect([cross.status, cross.body.code]).toEqual([403, "PERMISSION_DENIED"]);
    const site = await call("/account/api-keys", json({ label: "x", permissions: ["read"] }, { Cookie: cookie, "Sec-Fetch-Site": "cross-site" }));
    expect(site.status).toBe(403);
    const same = await call("/account/api-keys", json({ label: "x", permissions: ["read"] }, { Cookie: cookie, Origin: "http://service.test" }));
    expect(same.status).toBe(201);
    const form = await call("/dashboard/keys", {
      method: "POST",
      headers: { Cookie: cookie, "Content-Type": "application/x-www-form-urlencoded" },
      body: "label=x&permissions=read&csrf=wrong",
    });
    expect(form.status).toBe(403);
  });

  it("key management needs a session; logout and expiry end it", async () => {
    expect((await callJson("/account/api-keys")).body.code).toBe("UNAUTHENTICATED");
    const { cookie } = await newAccount();
    expect((await call("/account/api-keys", { headers: { Cookie: cookie } })).status).toBe(200);
    expect((await call("/account/logout", { method: "POST", headers: { Cookie: cookie } })).status).toBe(204);
    expect((await call("/account/api-keys", { headers: { Cookie: cookie } })).status).toBe(401);

    const second = await newAccount();
    await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE account_id = (SELECT id FROM accounts WHERE email = ?)")
      .bind(Date.now() - 1, second.email)
      .run();
    expect((await call("/account/api-keys", { headers: { Cookie: second.cookie } })).status).toBe(401);
  });

  it("an account holds at most 20 active keys; revoking one frees a place", async () => {
    const { cookie } = await newAccount();
    const keys = [];
    for (let i = 0; i < 20; i++) keys.push(await newKey({ cookie }));
    const create = () => callJson("/account/api-keys", json({ label: "21st", permissions: ["read"] }, { Cookie: cookie }));
    const refused = await create();
    expect([refused.status, refused.body.code]).toEqual([400, "VALIDATION_FAILED"]);
    expect((await call(`/account/api-keys/${keys[0]!.id}`, { method: "DELETE", headers: { Cookie: cookie } })).status).toBe(204);
    expect((await create()).status).toBe(201);
    const other = await newAccount();
    expect((await callJson(`/account/api-keys/${keys[1]!.id}`, { method: "DELETE", headers: { Cookie: other.cookie } })).body.code).toBe("NOT_FOUND");
  }, 30_000);
});
