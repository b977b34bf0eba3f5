// Signed load for the bench: accounts and API keys made through the JSON API, then every
// request signed afresh by the load generator (contract section 4), spread over enough keys
// that none passes its 30 requests a second.
import { createHmac } from "node:crypto";

const ACCOUNTS = 8;
const KEYS_PER_ACCOUNT = 20;

export async function prepareSignedLoad(baseUrl, requestTarget) {
  const keys = [];
  for (let a = 0; a < ACCOUNTS; a++) {
    const ip = `10.99.${a}.1`;
    const signup = await fetch(`${baseUrl}/account/signup`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": ip },
      body: JSON.stringify({ email: `bench-${Date.now()}-${a}@example.com`, password: "bench password 1234" }),
    });
    if (signup.status !== 201) throw new Error(`signup answered ${signup.status}`);
    const cookie = signup.headers.get("set-cookie").split(";")[0];
    for (let k = 0; k < KEYS_PER_ACCOUNT; k++) {
      if (k % 8 === 7) await new Promise((resolve) => setTimeout(resolve, 1000)); // the account API is limited per IP too
      const created = await fetch(`${baseUrl}/account/api-keys`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Cookie: cookie, "CF-Connecting-IP": ip },
        body: JSON.stringify({ label: `bench ${k}`, permissions: ["read"] }),
      });
      if (created.status !== 201) throw new Error(`key creation answered ${created.status}`);
      keys.push(await created.json());
    }
  }
  let next = 0;
  return {
    path: requestTarget,
    keys: keys.length,
    setupRequest(request) {
      const key = keys[next++ % keys.length];
      const timestamp = String(Date.now());
      const signature = createHmac("sha256", key.secret).update(`${timestamp}\nGET\n${requestTarget}\n`).digest("hex");
      return {
        ...request,
        headers: { ...request.headers, "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature, "CF-Connecting-IP": `10.98.${next & 255}.1` },
      };
    },
  };
}
