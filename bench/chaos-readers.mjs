// bench:chaos's readers (bench/chaos.mjs): clients that read through the whole run, kills included,
// and count what they were answered against what the service promised.
import { createKey, sign, signUp } from "./signed-load.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether an answer of `GET /api/orderbook/{symbol}?sequence=` differs from the publisher's own book. */
export function bookDiffers(body, want) {
  return JSON.stringify([body.sequence, body.bids, body.asks]) !== JSON.stringify([want.sequence, want.bids, want.asks]);
}

/** Runs `step` until stopped; a step that throws (the runtime is down) is tried again after `pauseMs`. */
function loop(step, pauseMs) {
  let stopped = false;
  const run = (async () => {
    while (!stopped) {
      await step().catch(() => undefined);
      await sleep(pauseMs);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await run;
    },
  };
}

/** One address 25 times a second: answers past 10 within any second (certain by send and arrival times). */
export function limitReader(url, counts) {
  const admitted = [];
  const looped = loop(async () => {
    const sentAt = Date.now();
    const response = await fetch(`${url}/api/time`, { headers: { "CF-Connecting-IP": "10.91.0.1" }, signal: AbortSignal.timeout(5_000) });
    if (response.status === 200) admitted.push([sentAt, Date.now()]);
    await response.arrayBuffer();
  }, 40);
  return {
    stop: async () => {
      await looped.stop();
      // Eleven admitted whose server moments surely fall within one second: the last's arrival less than 1 s after the first's sending.
      for (let k = 10; k < admitted.length; k++) if (admitted[k][1] - admitted[k - 10][0] < 1_000) counts.beyondLimit += 1;
      return admitted.length;
    },
  };
}

/**
 * Reads the book history while the run goes on: a random acknowledged batch's sequence of a random
 * market, three times a second; an answer that is not that batch's book (a 404 included: the
 * history lost what was acknowledged) is a mismatch. Down or starting (a connection refused, a 503)
 * is not.
 */
export function historyReader(url, markets, plans, publishers, counts) {
  let reads = 0;
  const looped = loop(async () => {
    const m = Math.floor(Math.random() * markets.length);
    const acked = [...publishers[m].acked.keys()].filter((i) => publishers[m].acked[i]);
    if (acked.length === 0) return;
    const want = plans[markets[m]].books[acked[Math.floor(Math.random() * acked.length)]];
    const response = await fetch(`${url}/api/orderbook/${markets[m]}?sequence=${want.sequence}&depth=200`, {
      headers: { "CF-Connecting-IP": "10.96.0.1" },
      signal: AbortSignal.timeout(5_000),
    });
    const body = await response.json();
    if (response.status === 503 || response.status === 429) return;
    reads += 1;
    if (response.status !== 200 || bookDiffers(body, want))
      counts.bookMismatches.push(`history read of ${markets[m]} at ${want.sequence} during the run: ${response.status} ${JSON.stringify(body).slice(0, 160)}`);
  }, 300);
  return {
    stop: async () => {
      await looped.stop();
      return reads;
    },
  };
}

/**
 * An account key read with, signed, five times a second, and revoked through the account API at
 * `revokeAt()`'s signal (retried until answered 204, across kills): every 200 to a request sent
 * after the revocation was answered counts (docs/limits.md#key-gates: the next request fails).
 */
export async function revokedKeyReader(url, counts) {
  const stamp = Date.now().toString(36);
  const cookie = await signUp(url, `chaos-${stamp}@example.com`, "10.97.0.1");
  const key = await createKey(url, cookie, "chaos revoked", ["read"], "10.97.0.2");
  let revokedAt;
  let before = 0;
  const looped = loop(async () => {
    const target = "/v1/markets";
    const timestamp = String(Date.now());
    const sentAt = Date.now();
    const response = await fetch(`${url}${target}`, {
      headers: { "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": sign(key.secret, timestamp, "GET", target), "CF-Connecting-IP": "10.97.0.3" },
      signal: AbortSignal.timeout(5_000),
    });
    await response.arrayBuffer();
    if (response.status !== 200) return;
    if (revokedAt !== undefined && sentAt > revokedAt)
      counts.afterRevocation.push(`a request sent ${sentAt - revokedAt} ms after the revocation was answered 200`);
    else before += 1;
  }, 200);
  return {
    /** Revokes the key, trying until the service answers 204; resolves with the moment it did. */
    revoke: async () => {
      for (;;) {
        const response = await fetch(`${url}/account/api-keys/${key.id}`, {
          method: "DELETE",
          headers: { Cookie: cookie, Origin: url, "CF-Connecting-IP": "10.97.0.4" },
          signal: AbortSignal.timeout(5_000),
        }).catch(() => undefined);
        if (response?.status === 204) return (revokedAt = Date.now());
        await sleep(300);
      }
    },
    stop: async () => {
      await looped.stop();
      return { answeredBefore: before, revoked: revokedAt !== undefined };
    },
  };
}
