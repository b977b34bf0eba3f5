import { sign, signaturePayload } from "../../src/access/signature";
import { call } from "./http";

let accounts = 0;

/** Signs up a fresh account through the JSON API and returns its session cookie. */
export async function newAccount(ip?: string): Promise<{ cookie: string; email: string; password: string }> {
  accounts += 1;
  const email = `trader${accounts}-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery staple";
  const response = await call("/account/signup", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email, password }),
    ip,
  });
  if (response.status !== 201) throw new Error(`signup: ${response.status} ${await response.text()}`);
  const cookie = response.headers.get("Set-Cookie")!.split(";")[0]!;
  return { cookie, email, password };
}

export interface TestKey {
  id: string;
  secret: string;
  cookie: string;
}

export async function newKey(options: { permissions?: string[]; allowCidrs?: string[]; expiresAt?: number | null; cookie?: string } = {}): Promise<TestKey> {
  const cookie = options.cookie ?? (await newAccount()).cookie;
  const response = await call("/account/api-keys", {
    method: "POST",
    headers: { "Content-Type": "application/json", Cookie: cookie },
    body: JSON.stringify({
      label: "test",
      permissions: options.permissions ?? ["read"],
      allowCidrs: options.allowCidrs ?? [],
      expiresAt: options.expiresAt ?? null,
    }),
  });
  if (response.status !== 201) throw new Error(`create key: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { id: string; secret: string };
  return { id: body.id, secret: body.secret, cookie };
}

/** A request signed as docs/signing.md says, with optional overrides to break it. */
export async function signedCall(
  key: { id: string; secret: string },
  method: string,
  target: string,
  options: { body?: string; timestamp?: number; ip?: string; headers?: Record<string, string>; signatureOverride?: string } = {},
): Promise<Response> {
  const timestamp = options.timestamp ?? Date.now();
  const body = options.body ?? "";
  const signature = options.signatureOverride ?? (await sign(key.secret, signaturePayload({ timestamp, method, requestTarget: target, body })));
  return call(target, {
    method,
    ip: options.ip,
    body: method === "GET" ? undefined : body,
    headers: {
      "X-API-KEY": key.id,
      "X-TIMESTAMP": String(timestamp),
      "X-SIGNATURE": signature,
      ...(body ? { "Content-Type": "application/json" } : {}),
      ...options.headers,
    },
  });
}

/** A publishing key the operator issues (docs/operations.md#publish-keys); every market unless `markets` says. */
export async function newPublishKey(
  options: { markets?: string[] | "*"; allowIps?: string[]; expiresAt?: number | null; label?: string } = {},
): Promise<TestKey> {
  const response = await call("/admin/publish-keys", {
    method: "POST",
    headers: { Authorization: "Bearer test-admin-token", "Content-Type": "application/json" },
    body: JSON.stringify({
      label: options.label ?? "test feed",
      markets: options.markets ?? "*",
      allowIps: options.allowIps ?? [],
      expiresAt: options.expiresAt ?? null,
    }),
  });
  if (response.status !== 201) throw new Error(`issue publish key: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { id: string; secret: string };
  return { id: body.id, secret: body.secret, cookie: "" };
}
