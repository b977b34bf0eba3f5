// Signed load for the bench: creates an account and API keys through the JSON API, then signs
// every request afresh (contract section 4) as a real client would.
import { createHmac } from "node:crypto";

export async function prepareSignedLoad(baseUrl, requestTarget) {
  throw new Error("signed endpoints are not built yet");
}
