import { describe, expect, it } from "vitest";
import { newAccount, newKey, signedCall } from "../support/accounts";
import { callJson } from "../support/http";

const usage = (cookie: string, id: string, query = "") => callJson(`/account/api-keys/${id}/usage${query}`, { headers: { Cookie: cookie } });

describe("a key's usage (docs/limits.md#your-keys-usage)", () => {
  it("counts every signed request and every 429 of the key, per minute and per hour; only its owner reads it", async () => {
    const { cookie } = await newAccount();
    const key = await newKey({ cookie });
    // 31 signed reads at once: the key's limit is 30 a second, so one is refused.
    const statuses = await Promise.all(Array.from({ length: 31 }, () => signedCall(key, "GET", "/v1/ticker/24hr?symbol=BTCUSDT").then((r) => r.status)));
    const refused = statuses.filter((s) => s === 429).length;
    expect(refused, `statuses ${statuses.join(",")}`).toBeGreaterThanOrEqual(1);

    for (const interval of ["1m", "1h"] as const) {
      const { status, body } = await usage(cookie, key.id, `?interval=${interval}`);
      expect(status).toBe(200);
      expect(body.keyId).toBe(key.id);
      expect(body.interval).toBe(interval);
      const total = body.buckets.reduce((n: number, b: { requests: number }) => n + b.requests, 0);
      const limited = body.buckets.reduce((n: number, b: { rateLimited: number }) => n + b.rateLimited, 0);
      expect([total, limited], `${interval}: requests and 429s`).toEqual([31, refused]);
      const size = interval === "1m" ? 60_000 : 3_600_000;
      for (const bucket of body.buckets) expect(bucket.start % size, `${interval} buckets start on their boundary`).toBe(0);
    }
    // `since` after the buckets leaves them out.
    expect((await usage(cookie, key.id, `?since=${Date.now() + 3_600_000}`)).body.buckets).toEqual([]);

    const stranger = await newAccount();
    const other = await usage(stranger.cookie, key.id);
    expect([other.status, other.body.code], "another account").toEqual([404, "NOT_FOUND"]);
    expect((await callJson(`/account/api-keys/${key.id}/usage`)).status, "no session").toBe(401);
    expect((await usage(cookie, key.id, "?interval=5m")).status, "an interval that is not kept").toBe(400);
  });
});
