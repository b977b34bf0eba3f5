import { adminToken, issuePublishKey } from "../../scripts/publish-key.mjs";

/**
 * A fresh account's API key, made through the dashboard's JSON API as a script would (Node's
 * fetch against the running service; test/support/accounts.ts is the workerd twin).
 */
export async function newApiKey(baseUrl: string, permissions: string[], ip: string): Promise<{ id: string; secret: string }> {
  const headers = { "Content-Type": "application/json", "CF-Connecting-IP": ip };
  const email = `key-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const signUp = await fetch(`${baseUrl}/account/signup`, { method: "POST", headers, body: JSON.stringify({ email, password: "a password for tests" }) });
  if (signUp.status !== 201) throw new Error(`signup: ${signUp.status} ${await signUp.text()}`);
  const cookie = signUp.headers.get("Set-Cookie")!.split(";")[0]!;
  const created = await fetch(`${baseUrl}/account/api-keys`, {
    method: "POST",
    headers: { ...headers, Cookie: cookie },
    body: JSON.stringify({ label: "test", permissions }),
  });
  if (created.status !== 201) throw new Error(`create key: ${created.status} ${await created.text()}`);
  return (await created.json()) as { id: string; secret: string };
}

/** A publishing key issued by the operator (docs/operations.md#publish-keys), for `markets` or every market. */
export function newPublishKey(baseUrl: string, markets: string[] | "*" = "*"): Promise<{ id: string; secret: string }> {
  return issuePublishKey(baseUrl, adminToken(), { label: "e2e feed", markets });
}
