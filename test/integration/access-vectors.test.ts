import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { KeyRecord } from "../../src/access/keys";
import { authenticateSigned } from "../../src/access/middleware";
import { seal } from "../../src/core/seal";
import vectors from "../fixtures/signing-vectors.json";
import { call } from "../support/http";

let keys = 0;

/** A key that signs with the vector's secret, installed in its AccessGuard as the dashboard would. */
/** A key with the vector's secret; with `publish`, an operator's publishing key for every market. */
async function installVectorKey(secret: string, permissions: KeyRecord["permissions"]): Promise<string> {
  keys += 1;
  const keyId = `mk_${"0".repeat(20)}${keys.toString(16).padStart(4, "0")}`;
  const record: KeyRecord = {
    keyId,
    accountId: "acct_vectors",
    sealedSecret: await seal(env.SEALING_KEY, secret, keyId),
    permissions,
    allowCidrs: [],
    expiresAt: null,
    createdAt: 0,
    revokedAt: null,
    ...(permissions.includes("publish") && { markets: "*" as const }),
  };
  await env.ACCESS_GUARD.getByName(`key:${keyId}`).installKey(record);
  return keyId;
}

describe("the documented request-signing vectors, through the service", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // The clock is set to each vector's own timestamp, so the whole path — request target as
  // sent, payload, sealed secret, crypto.subtle.verify — is checked against the published signature.
  it.each(vectors.requestSigning.filter((v) => v.requestTarget !== "/v1/ws"))(
    "$method $requestTarget is accepted with the vector's signature and refused with one hex digit changed",
    async (vector) => {
      vi.useFakeTimers({ toFake: ["Date"], now: vector.timestamp });
      const keyId = await installVectorKey(vector.secret, ["read", "publish"]);
      const send = (signature: string) =>
        call(vector.requestTarget, {
          method: vector.method,
          body: vector.body || undefined,
          headers: {
            "X-API-KEY": keyId,
            "X-TIMESTAMP": String(vector.timestamp),
            "X-SIGNATURE": signature,
            ...(vector.body ? { "Content-Type": "application/json" } : {}),
          },
        });
      const accepted = await send(vector.signature);
      expect(accepted.status, await accepted.clone().text()).toBe(200);
      const flipped = vector.signature.slice(0, -1) + (vector.signature.endsWith("0") ? "1" : "0");
      const refused = await send(flipped);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { code: string }).code).toBe("INVALID_SIGNATURE");
    },
  );

  it("the /v1/ws vector signs the path alone: the query form of docs/streams.md accepts it", async () => {
    const vector = vectors.requestSigning.find((v) => v.requestTarget === "/v1/ws")!;
    vi.useFakeTimers({ toFake: ["Date"], now: vector.timestamp });
    const keyId = await installVectorKey(vector.secret, ["stream"]);
    const request = new Request(
      `http://service.test/v1/ws?apiKey=${keyId}&timestamp=${vector.timestamp}&signature=${vector.signature}&streams=ticker.BTCUSDT`,
      {
        headers: { "CF-Connecting-IP": "192.0.2.240" },
      },
    );
    expect((await authenticateSigned(env, request, { permission: "stream", allowQueryForm: true })).keyId).toBe(keyId);
  });
});
