import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { keyUsageLedger } from "../../src/core/object-ids";
import { newAccount, newKey, signedCall } from "../support/accounts";
import { evictWhenIdle } from "../support/evict";
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

describe("keys' usage ledgers (src/access/key-usage-ledger.ts)", () => {
  const total = (buckets: { requests: number }[]) => buckets.reduce((n, b) => n + b.requests, 0);

  it("a key's counts outlive its guard leaving memory (the guard held them until its alarm before)", async () => {
    const { cookie } = await newAccount();
    const key = await newKey({ cookie });
    for (let i = 0; i < 5; i++) expect((await signedCall(key, "GET", "/v1/ticker/24hr?symbol=BTCUSDT")).status).toBe(200);
    // Every use told has landed (a usage read waits for them), then the ledger flushes and the guard goes.
    expect(total((await usage(cookie, key.id)).body.buckets)).toBe(5);
    await runDurableObjectAlarm(keyUsageLedger(env, key.id));
    await evictWhenIdle(env.ACCESS_GUARD.getByName(`key:${key.id}`));
    await evictWhenIdle(keyUsageLedger(env, key.id));
    for (const interval of ["1m", "1h"]) expect(total((await usage(cookie, key.id, `?interval=${interval}`)).body.buckets), interval).toBe(5);
  });

  it("a ledger stores all its keys' counts in one row a bucket: a flush of many keys writes a few rows, the guards none", async () => {
    const { cookie } = await newAccount();
    const keys = [];
    for (let i = 0; i < 4; i++) keys.push(await newKey({ cookie }));
    // Several keys of one ledger, if the hash spreads them so; the property holds for each ledger alike.
    for (const key of keys) for (let i = 0; i < 3; i++) expect((await signedCall(key, "GET", "/v1/markets")).status).toBe(200);
    for (const key of keys) await usage(cookie, key.id);
    const ledgers = new Map<string, string[]>();
    for (const key of keys) {
      const name = keyUsageLedger(env, key.id).id.toString();
      ledgers.set(name, [...(ledgers.get(name) ?? []), key.id]);
    }
    for (const key of keys) await runDurableObjectAlarm(keyUsageLedger(env, key.id));
    for (const [, ids] of ledgers) {
      const rows = await runInDurableObject(keyUsageLedger(env, ids[0]!), async (_ledger, state) =>
        state.storage.sql.exec<{ interval: string; counts: string }>("SELECT interval, counts FROM usage_buckets").toArray(),
      );
      // The run's requests fall in one or two minutes and one or two hours, whatever the number of keys.
      expect(rows.length, `rows of a ledger holding ${ids.length} keys`).toBeLessThanOrEqual(4);
      for (const id of ids) {
        const counted = rows.filter((r) => r.interval === "1m").reduce((n, r) => n + ((JSON.parse(r.counts)[id]?.[0] as number) ?? 0), 0);
        expect(counted, id).toBe(3);
      }
    }
    for (const key of keys) {
      const stored = await runInDurableObject(env.ACCESS_GUARD.getByName(`key:${key.id}`), async (_guard, state) => [
        state.storage.kv.get("usage"),
        await state.storage.getAlarm(),
      ]);
      expect(stored, "the guard's usage row and alarm").toEqual([undefined, null]);
    }
  });

  it("a flush that fails loses no count: what it took is held again and stored by the next", async () => {
    const keyId = "mk_0123456789abcdef01234567";
    await runInDurableObject(keyUsageLedger(env, keyId), async (ledger) => {
      const at = Date.now();
      ledger.count(keyId, at, false);
      ledger.count(keyId, at, true);
      const failing = ledger as unknown as { store: () => void };
      failing.store = () => {
        throw new Error("the disk is full");
      };
      await expect(ledger.alarm(), "the failed flush throws, for the runtime to try it again").rejects.toThrow("the disk is full");
      delete (failing as { store?: () => void }).store;
      ledger.count(keyId, at, false);
      await ledger.alarm();
      const stored = ledger.usage(keyId, "1m");
      expect(
        stored.map((b) => [b.requests, b.rateLimited]),
        "three counted, one a 429, stored once",
      ).toEqual([[3, 1]]);
    });
  });
});
