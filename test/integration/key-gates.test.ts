import { createExecutionContext, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { KeyUsageLedger } from "../../src/access/key-usage-ledger";
import { sign, signaturePayload } from "../../src/access/signature";
import { createApp } from "../../src/app";
import { accessGuard, keyGate, objectCalls, usageLedgerOf } from "../../src/core/object-ids";
import { newAccount, newKey, type TestKey } from "../support/accounts";
import { withFailing } from "../support/failing";
import { call, callJson } from "../support/http";

// Account keys' signed requests are checked, counted and carried by their gates (docs/limits.md#key-gates).
const app = createApp();

/** A signed GET through the app, every read past its copy's max age, its waitUntil work awaited. */
async function signedRead(key: TestKey, target: string, vars: Record<string, string> = {}): Promise<{ status: number; headers: Headers; code?: string }> {
  const timestamp = Date.now();
  const signature = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: target, body: "" }));
  const ctx = createExecutionContext();
  const response = await app.request(
    target,
    { headers: { "X-API-KEY": key.id, "X-TIMESTAMP": String(timestamp), "X-SIGNATURE": signature, "CF-Connecting-IP": "192.0.2.40" } },
    { ...env, MARKET_READ_MAX_AGE_MS: "0", METRICS_FLUSH_MS: "0", ANALYTICS_WINDOW_MS: "0", ...vars },
    ctx,
  );
  const body = (await response.json()) as { code?: string };
  await waitOnExecutionContext(ctx);
  return { status: response.status, headers: response.headers, code: body.code };
}

const counters = async () =>
  (
    (await (await app.request("/admin/isolate", { headers: { Authorization: "Bearer test-admin-token" } }, env)).json()) as {
      objectCalls: Record<string, number>;
    }
  ).objectCalls;
/** Requests the gates served, as the metrics count them (what the bill is read from). */
async function gateRequestsServed(): Promise<number> {
  const ctx = createExecutionContext();
  const response = await app.request("/admin/metrics", { headers: { Authorization: "Bearer test-admin-token" } }, { ...env, METRICS_FLUSH_MS: "0" }, ctx);
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return Number(/^mds_object_requests_total\{kind="call",object="gate"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}
const NAMES = ["marketReads", "guard", "gate", "gateReads", "usageLedger"] as const;
const callsOf = (before: Record<string, number>, after: Record<string, number>) => NAMES.map((name) => (after[name] ?? 0) - (before[name] ?? 0));

describe("key gates (docs/limits.md#key-gates)", () => {
  it("a signed read past its copy's max age is one call, its key's gate's: the key checked, the market's answer carried, no guard or ledger call", async () => {
    const key = await newKey();
    expect((await signedRead(key, "/v1/ticker/24hr?symbol=BTCUSDT")).status, "the first use (its gate reads the key's record)").toBe(200);
    const before = await counters();
    const servedBefore = await gateRequestsServed();
    for (let i = 0; i < 10; i += 1) {
      const response = await signedRead(key, "/v1/ticker/24hr?symbol=BTCUSDT");
      expect([response.status, response.headers.get("RateLimit-Limit")], `request ${i}`).toEqual([200, "30"]);
    }
    const [marketReads, guard, gate, gateReads, ledger] = callsOf(before, await counters());
    // A read that carries its check is one request at the gate, as billed (the bench reads these).
    expect((await gateRequestsServed()) - servedBefore, "requests the gates served for 10 signed reads").toBe(10);
    expect([marketReads, guard, gate, gateReads], "[market reads, guard calls, gate calls, gate reads] of 10 signed reads").toEqual([0, 0, 10, 10]);
    // Counted in the gate and handed to the ledger every 5 s: at most one hand-over within these requests, not one call each.
    expect(ledger, "ledger calls for 10 signed reads").toBeLessThanOrEqual(1);
    const usage = await callJson(`/account/api-keys/${key.id}/usage?interval=1m`, { headers: { Cookie: key.cookie } });
    const counted = (usage.body.buckets as { requests: number }[]).reduce((sum, b) => sum + b.requests, 0);
    expect(counted, "a usage read hands the gate's counts over first: every request answered is in it").toBe(11);
  });

  it("a revocation is answered once the key's gate is told: a gate not reached is 503, the key stays listed active, and the guard tells the gate again until it hears", async () => {
    const key = await newKey();
    expect((await signedRead(key, "/v1/markets")).status, "its gate now holds the key's record").toBe(200);
    await withFailing(keyGate(env, key.id), "forgetKey", async () => {
      const revoke = await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: key.cookie } });
      expect([revoke.status, ((await revoke.json()) as { code: string }).code, revoke.headers.get("Retry-After")]).toEqual([503, "UNAVAILABLE", "1"]);
      const listed = (await callJson("/account/api-keys", { headers: { Cookie: key.cookie } })).body.keys as { id: string; status: string }[];
      expect(listed.find((k) => k.id === key.id)?.status, "not listed revoked until its gate is told").toBe("active");
    });
    // Nobody asks again: the guard's alarm tells the gate once it is reachable.
    expect(await runDurableObjectAlarm(accessGuard(env, `key:${key.id}`)), "the guard set an alarm to tell its gate again").toBe(true);
    const after = await signedRead(key, "/v1/markets");
    expect([after.status, after.code]).toEqual([401, "INVALID_API_KEY"]);
    expect(await runDurableObjectAlarm(accessGuard(env, `key:${key.id}`)), "told: no alarm left").toBe(false);
    const retry = await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: key.cookie } });
    expect(retry.status).toBe(204);
    const listed = (await callJson("/account/api-keys", { headers: { Cookie: key.cookie } })).body.keys as { id: string; status: string }[];
    expect(listed.find((k) => k.id === key.id)?.status).toBe("revoked");
  });
});

describe("a key's gate does not move (docs/limits.md#key-gates)", () => {
  it("with another number of address gates (a rollout, a change of ADDRESS_GATES) the key is at the same gate: a revocation told there holds for isolates of either count (fails before: the other count's gate served the revoked key for up to a day)", async () => {
    // A key whose ledger is 8 or more: under 8 gates the old naming put it elsewhere.
    let key = await newKey();
    while (usageLedgerOf(key.id) < 8) key = await newKey();
    // An isolate of another version, counting 8 address gates, uses the key: its gate holds the record.
    expect((await signedRead(key, "/v1/markets", { ADDRESS_GATES: "8" })).status, "the key's first use under 8 gates").toBe(200);
    expect((await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: key.cookie } })).status, "revoked (told under 32 gates)").toBe(
      204,
    );
    for (const gates of ["8", "32", "5"]) {
      const after = await signedRead(key, "/v1/markets", { ADDRESS_GATES: gates });
      expect([after.status, after.code], `the revoked key under ${gates} gates`).toEqual([401, "INVALID_API_KEY"]);
    }
  });
});

describe("an account's key listing (GET /account/api-keys)", () => {
  it("asks each gate and each ledger once for all the keys it holds, not once per key (fails before: a gate call and a ledger call per key)", async () => {
    const { cookie } = await newAccount();
    const keys: TestKey[] = [];
    const ledgersOf = () => new Set(keys.map((k) => usageLedgerOf(k.id))).size;
    for (let i = 0; i < 12; i++) keys.push(await newKey({ cookie }));
    // Until two keys share a ledger (32 ledgers: certain by the 33rd); revoked keys are listed too.
    while (ledgersOf() === keys.length) {
      expect((await call(`/account/api-keys/${keys[keys.length - 12]!.id}`, { method: "DELETE", headers: { Cookie: cookie } })).status).toBe(204);
      keys.push(await newKey({ cookie }));
    }
    const ledgers = ledgersOf();
    // The ledgers' last-use answers, counted where they are served (a gate's hand-over to a ledger,
    // which the listing may also cause for usage held from earlier requests, is another call).
    const prototype = KeyUsageLedger.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    const originals = { lastUse: prototype.lastUse!, lastUses: prototype.lastUses! };
    let asked = 0;
    let inside = false; // lastUses answers each key through lastUse: one question, not one per key
    prototype.lastUses = function (this: unknown, ...args: unknown[]) {
      asked += 1;
      inside = true;
      try {
        return originals.lastUses.apply(this, args);
      } finally {
        inside = false;
      }
    };
    prototype.lastUse = function (this: unknown, ...args: unknown[]) {
      if (!inside) asked += 1;
      return originals.lastUse.apply(this, args);
    };
    const before = { gate: objectCalls.gate };
    const listed = await callJson<{ keys: { id: string }[] }>("/account/api-keys", { headers: { Cookie: cookie } }).finally(() => {
      prototype.lastUse = originals.lastUse;
      prototype.lastUses = originals.lastUses;
    });
    expect(listed.body.keys.length).toBe(keys.length);
    // One more: the request's own admission at its address's gate.
    expect(objectCalls.gate - before.gate, "gate calls of one listing").toBeLessThanOrEqual(ledgers + 1);
    expect(asked, "ledger answers of one listing").toBe(ledgers);
  });
});
