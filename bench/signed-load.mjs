// Signed load for the bench: accounts and real API keys made through the account JSON API
// (docs/signing.md), then every request signed afresh by the load generator (timestamp and HMAC per
// request), spread over enough keys that none passes its 30 requests a second.
import { createHmac } from "node:crypto";

/** 8 accounts × 20 keys (the per-account maximum): 160 keys carry 4,800 signed req/s under their limits. */
const ACCOUNTS = 8;
const KEYS_PER_ACCOUNT = 20;

/** docs/signing.md: lowercase hex HMAC-SHA256 of `timestamp\nMETHOD\nrequestTarget\nbody`. */
export function sign(secret, timestamp, method, requestTarget, body = "") {
  return createHmac("sha256", secret).update(`${timestamp}\n${method}\n${requestTarget}\n${body}`).digest("hex");
}

/** The headers of a `POST /v1/ingest` of `text` signed now with a publishing key, from client address `ip`. */
export function ingestHeaders(key, text, ip) {
  const timestamp = String(Date.now());
  return {
    "Content-Type": "application/json",
    "X-API-KEY": key.id,
    "X-TIMESTAMP": timestamp,
    "X-SIGNATURE": sign(key.secret, timestamp, "POST", "/v1/ingest", text),
    "CF-Connecting-IP": ip,
  };
}

async function expectStatus(response, status, what) {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return response;
}

/**
 * Creates the accounts and keys; returns `{ path, keys, setupRequest }` for autocannon.
 * The account API is limited per client IP like the rest of the public surface, so every set-up
 * call comes from the next address of `nextIp`.
 */
/** Signs up an account through the JSON API (docs/signing.md); returns its session cookie. */
export async function signUp(baseUrl, email, ip) {
  const signup = await fetch(`${baseUrl}/account/signup`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "CF-Connecting-IP": ip },
    body: JSON.stringify({ email, password: "bench password 1234" }),
  });
  await expectStatus(signup, 201, "POST /account/signup");
  return signup.headers.get("set-cookie").split(";")[0];
}

/** Creates an API key for the signed-in account; returns `{ id, secret }`. */
export async function createKey(baseUrl, cookie, label, permissions, ip) {
  const created = await fetch(`${baseUrl}/account/api-keys`, {
    method: "POST",
    // Same-origin request (the CSRF rule for state changes).
    headers: { "Content-Type": "application/json", Cookie: cookie, Origin: baseUrl, "CF-Connecting-IP": ip },
    body: JSON.stringify({ label, permissions }),
  });
  await expectStatus(created, 201, "POST /account/api-keys");
  const { id, secret } = await created.json();
  return { id, secret };
}

export async function prepareSignedLoad(baseUrl, requestTarget, nextIp) {
  const stamp = Date.now().toString(36);
  const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, (_, a) => signUp(baseUrl, `bench-${stamp}-${a}@example.com`, nextIp())));
  const keys = [];
  for (const [a, cookie] of accounts.entries()) {
    for (let k = 0; k < KEYS_PER_ACCOUNT; k++) keys.push(await createKey(baseUrl, cookie, `bench ${a}.${k}`, ["read"], nextIp()));
  }
  // Check one signed request before the load, so a broken path fails loudly, not as non-2xx.
  const probe = keys[0];
  const timestamp = String(Date.now());
  const check = await fetch(baseUrl + requestTarget, {
    headers: {
      "X-API-KEY": probe.id,
      "X-TIMESTAMP": timestamp,
      "X-SIGNATURE": sign(probe.secret, timestamp, "GET", requestTarget),
      "CF-Connecting-IP": nextIp(),
    },
  });
  await expectStatus(check, 200, `signed GET ${requestTarget}`);

  let next = 0;
  return {
    path: requestTarget,
    keys: keys.length,
    setupRequest(request) {
      const key = keys[next++ % keys.length];
      const now = String(Date.now());
      return {
        ...request,
        headers: {
          ...request.headers,
          "X-API-KEY": key.id,
          "X-TIMESTAMP": now,
          "X-SIGNATURE": sign(key.secret, now, "GET", requestTarget),
          "CF-Connecting-IP": nextIp(),
        },
      };
    },
  };
}
