// A gateway simulator: signs and posts settlement callbacks the way a real gateway does
// (Standard Webhooks), retrying with the Standard Webhooks back-off and re-signing every
// attempt with a fresh timestamp.
//
//   npm run gateway -- send --gateway gw_… --secret whsec_… --settlement stl_1 --sequence 1 --status pending \
//       [--amount 1250.500000] [--asset USDC] [--chain eip155:1] [--id evt_…] [--base http://127.0.0.1:8787] \
//       [--attempts 3] [--backoff-scale 1] [--repeat 2]
//
// --repeat N delivers the very same event (same id, same body) N times, as a gateway's
// duplicate delivery does; each answer is printed on its own line.
//
// GATEWAY_ID, GATEWAY_SECRET and MDS_BASE_URL may stand for the flags. Exit code 0 when the
// event was delivered (2xx), 1 when the service refused it for good (4xx other than 429), 2
// when the attempts ran out.
import { createHmac, randomUUID } from "node:crypto";

/** Standard Webhooks retry schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

export function signWebhook(secret, webhookId, timestamp, rawBody) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${webhookId}.${timestamp}.${rawBody}`).digest("base64")}`;
}

/** Delivers one event; resolves with the final response (or throws after the attempts). */
export async function deliver({ base, gatewayId, secret, body, attempts = 3, backoffScale = 1, schedule = RETRY_SCHEDULE_MS, log = console.error }) {
  const raw = JSON.stringify(body); // every attempt sends these very bytes: same id, same body
  let last;
  let retryAfterMs = 0;
  for (let attempt = 0; attempt < Math.min(attempts, schedule.length); attempt++) {
    // A 429's Retry-After is a floor under the schedule's wait.
    const wait = Math.max(schedule[attempt] * backoffScale, retryAfterMs);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const timestamp = String(Math.floor(Date.now() / 1000)); // fresh for every attempt
    try {
      const response = await fetch(`${base}/api/gateway/callback`, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-GATEWAY-ID": gatewayId,
          "webhook-id": body.id,
          "webhook-timestamp": timestamp,
          "webhook-signature": signWebhook(secret, body.id, timestamp, raw),
        },
        body: raw,
      });
      const text = await response.text();
      log(`attempt ${attempt + 1}: HTTP ${response.status} ${text}`);
      last = { status: response.status, text };
      retryAfterMs = response.status === 429 ? Number(response.headers.get("Retry-After") ?? 1) * 1000 : 0;
      // 2xx: delivered. 4xx other than 429: the event itself is wrong; retrying will not help.
      if (response.ok || (response.status >= 400 && response.status < 500 && response.status !== 429)) return last;
    } catch (error) {
      log(`attempt ${attempt + 1}: ${error.message}`);
      retryAfterMs = 0;
    }
  }
  return last ?? { status: 0, text: "no answer" };
}

function parseFlags(argv) {
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--")) flags[argv[i].slice(2)] = argv[i + 1]?.startsWith("--") || argv[i + 1] === undefined ? "true" : argv[++i];
  }
  return flags;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [command, ...rest] = process.argv.slice(2);
  const flags = parseFlags(rest);
  const gatewayId = flags.gateway ?? process.env.GATEWAY_ID;
  const secret = flags.secret ?? process.env.GATEWAY_SECRET;
  if (command !== "send" || !gatewayId || !secret || !flags.settlement || !flags.sequence || !flags.status) {
    console.error(
      [
        "usage: npm run gateway -- send --gateway gw_… --secret whsec_… --settlement stl_1 --sequence 1 --status pending",
        "         [--amount 1250.500000] [--fee 0.12] [--asset USDC] [--chain eip155:1] [--id evt_…] [--reference acct_7]",
        "         [--base http://127.0.0.1:8787] [--attempts 3] [--backoff-scale 1] [--repeat 1]",
        "GATEWAY_ID, GATEWAY_SECRET and MDS_BASE_URL may stand for --gateway, --secret and --base.",
      ].join("\n"),
    );
    process.exit(64);
  }
  const body = {
    id: flags.id ?? `evt_${randomUUID()}`,
    type: "settlement.updated",
    gatewayId,
    occurredAt: Date.now(),
    data: {
      settlementId: flags.settlement,
      sequence: Number(flags.sequence),
      status: flags.status,
      chain: flags.chain ?? "eip155:1",
      asset: flags.asset ?? "USDC",
      amount: flags.amount ?? "1250.500000",
      ...(flags.fee ? { fee: flags.fee } : {}),
      txHash: flags["tx-hash"] ?? `0x${randomUUID().replaceAll("-", "")}`,
      confirmations: Number(flags.confirmations ?? 0),
      requiredConfirmations: Number(flags["required-confirmations"] ?? 12),
      ...(flags.reference ? { reference: flags.reference } : {}),
    },
  };
  console.error(`event ${body.id}`);
  let result;
  for (let copy = 0; copy < Number(flags.repeat ?? 1); copy++) {
    result = await deliver({
      base: flags.base ?? process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787",
      gatewayId,
      secret,
      body,
      attempts: Number(flags.attempts ?? 3),
      backoffScale: Number(flags["backoff-scale"] ?? 1),
    });
    console.log(result.text);
  }
  process.exit(result.status >= 200 && result.status < 300 ? 0 : result.status >= 400 && result.status < 500 && result.status !== 429 ? 1 : 2);
}
