import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authenticateSigned } from "../../src/access/middleware";
import { sign, signaturePayload } from "../../src/access/signature";
import { keyUsageLedger } from "../../src/core/object-ids";
import { ProblemError } from "../../src/core/problem";
import { newKey, signedCall } from "../support/accounts";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";

/** A `/v1/ws` request as a browser sends it: the credentials in the query, the path signed alone. */
async function queryFormRequest(key: { id: string; secret: string }, options: { signedTarget?: string; ip?: string } = {}): Promise<Request> {
  const timestamp = Date.now();
  const signature = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: options.signedTarget ?? "/v1/ws", body: "" }));
  return new Request(`http://service.test/v1/ws?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}&streams=book.BTCUSDT`, {
    headers: { "CF-Connecting-IP": options.ip ?? "192.0.2.230" },
  });
}

async function refusal(promise: Promise<unknown>): Promise<ProblemError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  return error as ProblemError;
}

describe("authenticateSigned: the one AccessGuard call behind /v1 (and /v1/ws)", () => {
  it("the query form signs the path alone and needs the stream permission", async () => {
    const streamer = await newKey({ permissions: ["stream"] });
    expect(await authenticateSigned(env, await queryFormRequest(streamer), { permission: "stream", allowQueryForm: true })).toMatchObject({
      keyId: streamer.id,
    });

    const reader = await newKey({ permissions: ["read"] });
    expect((await refusal(authenticateSigned(env, await queryFormRequest(reader), { permission: "stream", allowQueryForm: true }))).code).toBe(
      "PERMISSION_DENIED",
    );

    const wholeTarget = await queryFormRequest(streamer, { signedTarget: "/v1/ws?streams=book.BTCUSDT" });
    expect((await refusal(authenticateSigned(env, wholeTarget, { permission: "stream", allowQueryForm: true }))).code).toBe("INVALID_SIGNATURE");
  });

  it("without allowQueryForm, credentials in the query are not credentials", async () => {
    const streamer = await newKey({ permissions: ["stream"] });
    const error = await refusal(authenticateSigned(env, await queryFormRequest(streamer), { permission: "stream" }));
    expect([error.status, error.code, error.message]).toEqual([401, "MISSING_CREDENTIALS", "X-API-KEY is missing"]);
  });

  it("a refusal carries the client IP's RateLimit headers, since it counts against that IP", async () => {
    const streamer = await newKey({ permissions: ["stream"] });
    const error = await refusal(
      authenticateSigned(env, await queryFormRequest({ ...streamer, secret: "wrong" }, { ip: "192.0.2.231" }), { permission: "stream", allowQueryForm: true }),
    );
    expect(error.code).toBe("INVALID_SIGNATURE");
    expect(error.headers).toMatchObject({ "RateLimit-Limit": "10", "RateLimit-Remaining": "9" });
  });

  it("last use: exact in the key's usage ledger; its guard stores it at most once a day, and no usage or alarm", async () => {
    const key = await newKey();
    const before = Date.now();
    expect((await signedCall(key, "GET", "/v1/markets")).status).toBe(200);
    const guardRows = () =>
      runInDurableObject(env.ACCESS_GUARD.getByName(`key:${key.id}`), async (_instance, state) => ({
        usage: state.storage.kv.get("usage"),
        lastUsedAt: state.storage.kv.get<number>("lastUsedAt"),
        alarm: await state.storage.getAlarm(),
      }));
    const first = await guardRows();
    expect(first.lastUsedAt, "the first use stored").toBeGreaterThanOrEqual(before);
    // The next uses must be a later millisecond than the first (an event, not a pause).
    await until(() => Date.now() > first.lastUsedAt!, { what: "the clock to pass the first use" });
    for (let i = 0; i < 3; i++) expect((await signedCall(key, "GET", "/v1/markets")).status).toBe(200);
    expect(await guardRows(), "later uses the same day write nothing; no usage row, no alarm").toEqual({
      usage: undefined,
      lastUsedAt: first.lastUsedAt,
      alarm: null,
    });
    const listed = (await callJson("/account/api-keys", { headers: { Cookie: key.cookie } })).body.keys[0];
    expect(listed.lastUsedAt, "the list shows the latest use").toBeGreaterThan(first.lastUsedAt!);
    // The ledger stores it with its flush (a usage read first: it waits for the uses told); the guard, evicted, no longer holds it.
    expect((await callJson(`/account/api-keys/${key.id}/usage`, { headers: { Cookie: key.cookie } })).status).toBe(200);
    const ledger = keyUsageLedger(env, key.id);
    await runDurableObjectAlarm(ledger);
    await evictDurableObject(env.ACCESS_GUARD.getByName(`key:${key.id}`));
    const again = (await callJson("/account/api-keys", { headers: { Cookie: key.cookie } })).body.keys[0];
    expect(again.lastUsedAt, "after the guard left memory").toBe(listed.lastUsedAt);
  });

  it("revocation lands in the key's guard, and the next request fails", async () => {
    const key = await newKey();
    expect((await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: key.cookie } })).status).toBe(204);
    const record = await runInDurableObject(env.ACCESS_GUARD.getByName(`key:${key.id}`), async (_instance, state) =>
      state.storage.get<{ revokedAt: number | null }>("key"),
    );
    expect(record?.revokedAt).toBeGreaterThan(0);
    const next = await signedCall(key, "GET", "/v1/markets");
    expect([next.status, ((await next.json()) as { code: string }).code]).toEqual([401, "INVALID_API_KEY"]);
  });
});
