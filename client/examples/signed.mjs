// Signs and calls GET /v1/ticker/24hr with an API key (HMAC-SHA256, server time corrected).
// Run: npm run example:signed   with MDS_API_KEY and MDS_API_SECRET set (dashboard → API
// Management). Without them, against a local server, it makes a throwaway local account and
// read key first, so the example runs on a fresh `npm start`.
import { MarketDataClient, MarketDataError } from "@market-data-edge/client";

const baseUrl = process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
let apiKey = process.env.MDS_API_KEY;
let secret = process.env.MDS_API_SECRET;

if (!apiKey || !secret) {
  if (!/^https?:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(baseUrl)) {
    console.error("Set MDS_API_KEY and MDS_API_SECRET (dashboard → API Management).");
    process.exit(1);
  }
  const json = (body, cookie) => ({
    method: "POST",
    headers: { "Content-Type": "application/json", ...(cookie ? { Cookie: cookie } : {}) },
    body: JSON.stringify(body),
  });
  const signUp = await fetch(`${baseUrl}/account/signup`, json({ email: `example-${Date.now()}@example.com`, password: "example password 123" }));
  if (signUp.status !== 201) throw new Error(`signup: ${signUp.status} ${await signUp.text()}`);
  const cookie = signUp.headers.get("Set-Cookie").split(";")[0];
  const created = await fetch(`${baseUrl}/account/api-keys`, json({ label: "client example", permissions: ["read"] }, cookie));
  if (created.status !== 201) throw new Error(`create key: ${created.status} ${await created.text()}`);
  ({ id: apiKey, secret } = await created.json());
  console.log(`No MDS_API_KEY given: made a throwaway local key ${apiKey}`);
}

const client = new MarketDataClient({ baseUrl, apiKey, secret });
try {
  const ticker = await client.signedGetTicker({ symbol: "BTCUSDT" });
  console.log(`signed GET /v1/ticker/24hr?symbol=BTCUSDT → last ${ticker.lastPrice}, 24h volume ${ticker.volume24h}`);
  console.log(
    `server clock offset ${client.serverClock.offsetMs?.toFixed(1)} ms; rate limit left ${client.pacer.state("signed")?.remaining}/${client.pacer.state("signed")?.limit}`,
  );
} catch (error) {
  if (error instanceof MarketDataError) console.error(`${error.code} (${error.status}): ${error.detail} [request ${error.requestId}]`);
  else throw error;
  process.exitCode = 1;
}
