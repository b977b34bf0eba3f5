import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sign, signaturePayload } from "../../src/access/signature";
import { TRANSLATIONS_MAX_BYTES, translations } from "../../src/binance/route-reads";
import { accessGuard } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { KEY_CHECK_EVERY_MS } from "../../src/publish/publish-channel-object";
import { COPIES_MAX_BYTES } from "../../src/reads/edge-copies";
import { heldCopyBytes } from "../../src/reads/edge-reads";
import { shardLayout, shardOf } from "../../src/streams/placement";
import { KEY_RECHECK_EVERY_MS } from "../../src/streams/protocol";
import { newAccount, newKey, newPublishKey, signedCall, type TestKey } from "../support/accounts";
import { withFailing } from "../support/failing";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";
import { ingestTrades } from "../support/market-batches";
import { until } from "../support/poll";
import { hostOf, hostOfGroup } from "../support/registry";
import { openSocket, publishPath, shardOfConnection, type TestSocket, upgrade } from "./streams-support";

const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { ...ADMIN, "Content-Type": "application/json", ...headers },
  body: JSON.stringify(body),
});

const answerOf = (socket: TestSocket, id: unknown) => until(() => socket.messages.find((m) => m.id === id), { what: `the answer to ${String(id)}` });
const channelOf = (key: TestKey) => env.PUBLISH_CHANNEL.getByName(`key:${key.id}`);
/** The shard a principal's connections land on, as the routes place them. */
const shardFor = (principal: string) => env.STREAM_HUB.getByName(shardOf(principal, shardLayout(env).shards));
/** A signed /v1/ws path for `key` (the query form: the path is what is signed). */
const keyedPath = async (key: TestKey) => {
  const timestamp = Date.now();
  const signature = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: "/v1/ws", body: "" }));
  return `/v1/ws?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`;
};
const trade = (id: string, price: string, quantity: string) => ({ id, price, quantity, side: "buy", time: Date.now() });

describe("trust: only publishers the operator names write a market (docs/security.md)", () => {
  it("a stranger's account cannot obtain or use a publishing right: not through the JSON API, the dashboard, or an older key's record", async () => {
    const { cookie } = await newAccount("198.51.100.31");
    const asked = await callJson("/account/api-keys", {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: cookie },
      body: JSON.stringify({ label: "sneaky", permissions: ["read", "publish"] }),
    });
    expect(asked.status, "the JSON API refuses publish").toBe(400);
    expect(asked.body.errors, "naming the field").toEqual([
      expect.objectContaining({ path: "body.permissions.1", message: expect.stringContaining("operator") }),
    ]);
    const page = await call("/dashboard", { headers: { Cookie: cookie } });
    expect(await page.text(), "the dashboard offers no publish box").not.toMatch(/value="publish"/);
    // A key made before the trust issue kept `publish` in its guard's record: it still cannot publish.
    const old = await newKey({ cookie, permissions: ["read"] });
    await runInDurableObject(accessGuard(env, `key:${old.id}`), async (_instance, state) => {
      const record = (await state.storage.get<{ permissions: string[] }>("key"))!;
      await state.storage.put("key", { ...record, permissions: ["read", "publish"] });
    });
    // The guard reads its record once per instance: a fresh one, as after a deploy.
    const body = JSON.stringify({ symbol: "BTCUSDT", trades: [trade("stranger-1", "1.00", "1000.00000")] });
    await runInDurableObject(accessGuard(env, `key:${old.id}`), (instance: object) => {
      (instance as { record: unknown }).record = undefined;
    });
    const refused = await signedCall(old, "POST", "/v1/ingest", { body, ip: "198.51.100.31" });
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([403, "PERMISSION_DENIED"]);
    const channel = await upgrade(await publishPath(old), "198.51.100.31");
    expect(channel.status, "nor the publisher channel").toBe(403);
    expect(
      (await callJson("/api/trades/BTCUSDT?limit=1000")).body.some((t: { id: string }) => t.id === "stranger-1"),
      "nothing applied",
    ).toBe(false);
  });

  it("a publish key limited to ETHUSDT publishes ETHUSDT (any spelling) and gets 403 FORBIDDEN_MARKET for BTCUSDT, nothing applied; on the channel too", async () => {
    const key = await newPublishKey({ markets: ["eth-usdt"] });
    const listed = await callJson("/admin/publish-keys", { headers: ADMIN });
    expect(listed.body.publishKeys.find((k: { id: string }) => k.id === key.id)).toMatchObject({ markets: ["ETHUSDT"], status: "active" });
    const own = await signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "ETH/USDT", trades: [trade("scope-1", "3400.5", "1")] }) });
    expect(own.status).toBe(200);
    const before = (await callJson("/api/ticker/BTCUSDT")).body;
    const other = await signedCall(key, "POST", "/v1/ingest", {
      body: JSON.stringify({ symbol: "BTCUSDT", trades: [trade("scope-2", "1.00", "1000.00000")] }),
    });
    expect([other.status, ((await other.json()) as { code: string }).code]).toEqual([403, "FORBIDDEN_MARKET"]);
    expect((await callJson("/api/ticker/BTCUSDT")).body.tradeCount24h, "nothing applied to BTCUSDT").toBe(before.tradeCount24h);
    const socket = await openSocket(await publishPath(key), "198.51.100.32");
    socket.ws.send(JSON.stringify({ id: 1, symbol: "BTCUSDT", trades: [trade("scope-3", "1.00", "1000.00000")] }));
    expect((await answerOf(socket, 1)).error).toMatchObject({ status: 403, code: "FORBIDDEN_MARKET" });
    socket.ws.send(JSON.stringify({ id: 2, symbol: "ethusdt", trades: [trade("scope-4", "3400.5", "1")] }));
    expect((await answerOf(socket, 2)).result).toMatchObject({ acceptedTrades: 1 });
    socket.ws.close();
  });

  it("on an open channel, a market-list change holds the next batch, expiry refuses to the millisecond, revocation closes at the check (alarm ≤ 10 s)", async () => {
    const key = await newPublishKey({ markets: ["SOLUSDT", "XRPUSDT"] });
    const socket = await openSocket(await publishPath(key), "198.51.100.33");
    const alarm = await runInDurableObject(channelOf(key), (_instance, state) => state.storage.getAlarm());
    expect(alarm! - Date.now(), "the key's next check is at most 10 s away").toBeLessThanOrEqual(KEY_CHECK_EVERY_MS);
    // A market-list change through the operator API: in force on the channel for the next batch.
    expect((await call(`/admin/publish-keys/${key.id}`, json("PATCH", { markets: ["XRPUSDT"] }))).status).toBe(200);
    socket.ws.send(JSON.stringify({ id: 1, symbol: "SOLUSDT", trades: [trade("grant-1", "150.500", "1.00")] }));
    expect((await answerOf(socket, 1)).error).toMatchObject({ code: "FORBIDDEN_MARKET" });
    // Expiry moved to the past at the guard alone (no push): the channel's next check closes it.
    await accessGuard(env, `key:${key.id}`).amendKey({ expiresAt: Date.now() - 1 });
    expect(await runDurableObjectAlarm(channelOf(key))).toBe(true);
    expect(await socket.closed).toEqual({ code: 1008, reason: "the publishing key expired" });

    const revoked = await newPublishKey();
    const second = await openSocket(await publishPath(revoked), "198.51.100.34");
    await accessGuard(env, `key:${revoked.id}`).revokeKey();
    expect(await runDurableObjectAlarm(channelOf(revoked))).toBe(true);
    expect(await second.closed).toEqual({ code: 1008, reason: "the publishing key was revoked" });
  });

  it("a batch whose key cannot be checked is refused, never applied unchecked (fail closed)", async () => {
    const key = await newPublishKey();
    const socket = await openSocket(await publishPath(key), "198.51.100.35");
    // The channel loses what it checks with, and its last check is old: the next batch must wait for a check that fails.
    await runInDurableObject(channelOf(key), async (instance: object, state) => {
      await state.storage.delete("key");
      (instance as { grant: unknown }).grant = undefined;
    });
    socket.ws.send(JSON.stringify({ id: 1, symbol: "SOLUSDT", trades: [trade("unchecked-1", "150.500", "1.00")] }));
    expect((await answerOf(socket, 1)).error).toMatchObject({ code: "UNAVAILABLE" });
    expect((await callJson("/api/trades/SOLUSDT?limit=1000")).body.some((t: { id: string }) => t.id === "unchecked-1")).toBe(false);
    socket.ws.close();
  });

  it("a publishing key has at most 4 open channels; a fifth is 429 before the upgrade", async () => {
    const key = await newPublishKey();
    const open = [];
    for (let i = 0; i < 4; i++) open.push(await openSocket(await publishPath(key), "198.51.100.36"));
    const fifth = await upgrade(await publishPath(key), "198.51.100.36");
    expect([fifth.status, ((await fifth.json()) as { code: string }).code]).toEqual([429, "STREAM_LIMIT"]);
    for (const s of open) s.ws.close();
  });

  it("revoking a stream key closes its open /v1/ws at once: its guard tells the shard holding the lease (before: at the shard's next check, up to 10 s)", async () => {
    const { cookie } = await newAccount("198.51.100.37");
    const key = await newKey({ cookie, permissions: ["stream"] });
    const socket = await openSocket(await keyedPath(key), "198.51.100.37");
    const shard = shardFor(`key:${key.id}`);
    const alarm = await runInDurableObject(shard, (_instance, state) => state.storage.getAlarm());
    expect(alarm! - Date.now(), "the shard's first check of the key is at most 10 s away").toBeLessThanOrEqual(KEY_CHECK_EVERY_MS);
    let closed: { code: number; reason: string } | undefined;
    void socket.closed.then((close) => {
      closed = close;
    });
    expect((await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: cookie } })).status).toBe(204);
    // No shard alarm is run: the close comes from the revocation itself.
    expect(await until(() => closed, { what: "the connection's close after the revocation" })).toEqual({ code: 1008, reason: "the API key was revoked" });
  });

  it("a shard the revocation did not reach closes at its check; a key's checks come once a minute and at its expiry (before: every 10 s)", async () => {
    const { cookie } = await newAccount("198.51.100.36");
    const expiresAt = Date.now() + 30_000;
    const expiring = await newKey({ cookie, permissions: ["stream"], expiresAt });
    const lasting = await newKey({ cookie, permissions: ["stream"] });
    const first = await openSocket(await keyedPath(expiring), "198.51.100.36");
    const second = await openSocket(await keyedPath(lasting), "198.51.100.36");
    const dueAfterCheck = async (principal: string) => {
      const shard = shardFor(principal);
      // The injected clock: the first check made due now instead of in 10 s.
      await runInDurableObject(shard, (_instance, state) => state.storage.kv.put("keysDue", 0));
      const checkedAt = Date.now();
      await runDurableObjectAlarm(shard);
      const due = await runInDurableObject(shard, (_instance, state) => state.storage.kv.get<number>("keysDue"));
      return { shard, due: due!, checkedAt };
    };
    if (shardFor(`key:${expiring.id}`).id.toString() !== shardFor(`key:${lasting.id}`).id.toString()) {
      const { due, checkedAt } = await dueAfterCheck(`key:${lasting.id}`);
      expect(due - checkedAt, "a key without expiry: the next check a minute on").toBeGreaterThanOrEqual(KEY_RECHECK_EVERY_MS - 1000);
      expect(due - checkedAt).toBeLessThanOrEqual(KEY_RECHECK_EVERY_MS + 1000);
    }
    const { shard, due } = await dueAfterCheck(`key:${expiring.id}`);
    expect(due, "a key that expires within the minute: the next check at its expiry").toBe(expiresAt);
    // The revocation's word is lost on its way (the shard's keyEnded fails): the shard's own check closes it.
    await withFailing(shard, "keyEnded", async () => {
      expect((await call(`/account/api-keys/${expiring.id}`, { method: "DELETE", headers: { Cookie: cookie } })).status).toBe(204);
    });
    await runInDurableObject(shard, (_instance, state) => state.storage.kv.put("keysDue", 0));
    await runDurableObjectAlarm(shard);
    expect(await first.closed).toEqual({ code: 1008, reason: "the API key was revoked" });
    second.ws.close();
  });

  it("a revocation's word a shard did not take is told again from the key's guard, without waiting for the shard's own check (fails before: keyEnded was tried once)", async () => {
    const { cookie } = await newAccount("198.51.100.42");
    const key = await newKey({ cookie, permissions: ["stream"] });
    const socket = await openSocket(await keyedPath(key), "198.51.100.42");
    const shard = shardFor(`key:${key.id}`);
    await withFailing(shard, "keyEnded", async () => {
      expect((await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: cookie } })).status).toBe(204);
    });
    // The guard's alarm, not the shard's: its retry reaches the shard now.
    expect(await runDurableObjectAlarm(accessGuard(env, `key:${key.id}`)), "the guard set an alarm to tell the shard again").toBe(true);
    expect(await socket.closed).toEqual({ code: 1008, reason: "the API key was revoked" });
    const untold = await runInDurableObject(accessGuard(env, `key:${key.id}`), (_instance, state) => state.storage.kv.get("shardsUntold"));
    expect(untold, "nothing left to tell").toBeUndefined();
  });

  it("a key check that finds its keys active writes one row however many keys (before: one per key every 10 s); one that cannot reach a key's guard closes its connections once it has failed for 2 minutes", async () => {
    const ip = "198.51.100.38";
    const keyed: { key: TestKey; socket: TestSocket }[] = [];
    for (const n of [0, 1]) {
      const { cookie } = await newAccount(`198.51.100.${39 + n}`);
      const key = await newKey({ cookie, permissions: ["stream"] });
      keyed.push({ key, socket: await openSocket(await keyedPath(key), ip) });
    }
    const names = [...new Set(keyed.map(({ key }) => shardOf(`key:${key.id}`, shardLayout(env).shards)))];
    // Every key's shard, its check made due and run with its duties' kv puts counted.
    const puts = async () => {
      let counted = 0;
      for (const name of names) {
        const shard = env.STREAM_HUB.getByName(name);
        type Held = { duties: { host: { storage: unknown } } };
        let own: unknown;
        await runInDurableObject(shard, (instance: object, state) => {
          state.storage.kv.put("keysDue", 0);
          // The duties' storage, its kv's puts counted (the host's storage is theirs alone).
          const host = (instance as Held).duties.host;
          own = host.storage;
          const kv: object = state.storage.kv;
          const counting: object = new Proxy(kv, {
            get: (target: object, prop: string | symbol) => {
              const value: unknown = Reflect.get(target, prop, target);
              if (typeof value !== "function") return value;
              return prop === "put"
                ? (...args: unknown[]) => {
                    counted += 1;
                    return (value as (...a: unknown[]) => unknown).apply(target, args);
                  }
                : (value as (...a: unknown[]) => unknown).bind(target);
            },
          });
          host.storage = { kv: counting };
        });
        expect(await runDurableObjectAlarm(shard), `${name}'s alarm, the key check`).toBe(true);
        await runInDurableObject(shard, (instance: object) => {
          (instance as Held).duties.host.storage = own;
        });
      }
      return counted;
    };
    expect(await puts(), "rows written by the checks of two active keys: the next check's time, once a shard").toBe(names.length);

    const failing = keyed[0]!;
    const shard = shardFor(`key:${failing.key.id}`);
    await withFailing(accessGuard(env, `key:${failing.key.id}`), "keyStatus", async () => {
      // The guard is down for every key (the class's method): each key's failing begins.
      expect(await puts(), "the first failed check writes when each key's failing began").toBe(names.length + keyed.length);
      const since = await runInDurableObject(shard, (_instance, state) => state.storage.kv.get<number>(`keyFailing:key:${failing.key.id}`));
      expect(since, "failing since the first failed check").toBeGreaterThan(0);
      // The injected clock: the failing began one check earlier; the next failed check closes.
      await runInDurableObject(shard, (_instance, state) => state.storage.kv.put(`keyFailing:key:${failing.key.id}`, since! - KEY_RECHECK_EVERY_MS));
      await puts();
      expect(await failing.socket.closed).toEqual({ code: 1008, reason: "the API key could not be checked" });
    });
    // The other key's failing is younger than the bound: its connection stays; once its guard
    // answers again nothing is kept of the failing.
    await puts();
    expect(
      await runInDurableObject(shardFor(`key:${keyed[1]!.key.id}`), (_instance, state) => [...state.storage.kv.list({ prefix: "keyFailing:" })].length),
      "failing marks kept",
    ).toBe(0);
    keyed[1]!.socket.ws.send(JSON.stringify({ op: "ping", id: 7 }));
    expect(await until(() => keyed[1]!.socket.messages.find((m) => m.id === 7), { what: "the other key's pong" })).toMatchObject({ op: "pong" });
    keyed[1]!.socket.ws.close();
  });
});

describe("the audit log (docs/operations.md#audit-log)", () => {
  it("every operator route writes its record with the change; a change that fails writes none", async () => {
    const since = Date.now();
    const ok = async (path: string, init: RequestInit, status: number) => expect((await call(path, init)).status, `${init.method} ${path}`).toBe(status);
    await ok("/admin/assets", json("POST", { asset: "AUD1T", name: "Audit coin", decimals: 6 }), 201);
    await ok(
      "/admin/markets",
      json("POST", { base: "AUD1T", quote: "USDT", tickSize: "0.01", stepSize: "0.1", minQty: "0.1", maxQty: "1000", minNotional: "1" }),
      201,
    );
    await ok("/admin/markets/AUD1TUSDT", json("PATCH", { tickSize: "0.05" }), 200);
    await ok("/admin/markets/AUD1TUSDT/status", json("PUT", { status: "HALTED" }), 200);
    await ok("/admin/assets/AUD1T/status", json("PUT", { status: "INACTIVE" }), 200);
    const gateway = (await callJson("/admin/gateways", json("POST", { name: "Audit gateway" }))).body;
    const rotated = (await callJson(`/admin/gateways/${gateway.id}/secrets`, json("POST", {}))).body;
    await ok(`/admin/gateways/${gateway.id}/secrets/${rotated.id}`, { method: "DELETE", headers: ADMIN }, 204);
    await ok(`/admin/gateways/${gateway.id}`, { method: "DELETE", headers: ADMIN }, 204);
    const key = await newPublishKey({ markets: ["BTCUSDT"] });
    await ok(`/admin/publish-keys/${key.id}`, json("PATCH", { markets: "*" }), 200);
    await ok(`/admin/publish-keys/${key.id}`, { method: "DELETE", headers: ADMIN }, 204);
    // Failures: a symbol listed twice, a delisted market's rules, a second revocation of a gateway.
    await ok("/admin/markets/AUD1TUSDT/status", json("PUT", { status: "DELISTED" }), 200);
    await ok("/admin/markets/AUD1TUSDT", json("PATCH", { tickSize: "0.1" }), 409);
    await ok(`/admin/gateways/${gateway.id}`, { method: "DELETE", headers: ADMIN }, 404);

    const pages: { action: string; target: string; route: string; operator: string; change: unknown }[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: typeof pages; nextCursor: string | null } } = await callJson(
        `/admin/audit?since=${since}&limit=3${cursor ? `&cursor=${cursor}` : ""}`,
        { headers: ADMIN },
      );
      pages.push(...page.body.data);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(pages.map((r) => `${r.action} ${r.target}`)).toEqual([
      "asset.list AUD1T",
      "market.list AUD1TUSDT",
      "market.rules AUD1TUSDT",
      "market.status AUD1TUSDT",
      "asset.status AUD1T",
      `gateway.approve ${gateway.id}`,
      `gateway.secret.add ${gateway.id}`,
      `gateway.secret.retire ${gateway.id}`,
      `gateway.revoke ${gateway.id}`,
      `publishKey.issue ${key.id}`,
      `publishKey.amend ${key.id}`,
      `publishKey.revoke ${key.id}`,
      "market.status AUD1TUSDT",
    ]);
    expect(pages[3]).toMatchObject({
      route: "PUT /admin/markets/:pair/status",
      change: { from: "TRADING", to: "HALTED" },
      operator: expect.stringMatching(/^admin:[0-9a-f]{16}$/),
    });
    expect(JSON.stringify(pages), "no secret in the log").not.toMatch(/test-admin-token|whsec_|"secret"/);
    const unauthenticated = await call("/admin/audit");
    expect(unauthenticated.status).toBe(401);
  });
});

describe("what the docs promise about publishing holds (docs/publishing.md)", () => {
  it("resending any of the last applied book updates answers duplicate and changes nothing; a different update at an old sequence is STALE_SEQUENCE", async () => {
    const key = await newPublishKey();
    const base = (await callJson("/api/orderbook/XRPUSDT?depth=1")).body.sequence as number;
    const delta = (n: number) => ({ type: "delta", sequence: base + n, bids: [[`0.${5000 + n}`, "10.0"]], asks: [] });
    const post = (book: unknown) => signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "XRPUSDT", book }) });
    expect((await post({ type: "snapshot", sequence: base + 1, bids: [["0.5000", "1.0"]], asks: [["0.7000", "1.0"]] })).status).toBe(200);
    for (let n = 2; n <= 6; n++) expect((await post(delta(n))).status, `delta ${n}`).toBe(200);
    const book = (await callJson("/api/orderbook/XRPUSDT")).body;
    for (const n of [5, 3]) {
      const again = await post(delta(n));
      expect([again.status, ((await again.json()) as { book: string }).book], `resend of ${n}`).toEqual([200, "duplicate"]);
    }
    expect((await post([delta(3), delta(4), delta(5)])).status, "a resent batch").toBe(200);
    const changed = await post({ ...delta(4), bids: [["0.6000", "1.0"]] });
    expect([changed.status, ((await changed.json()) as { code: string }).code]).toEqual([409, "STALE_SEQUENCE"]);
    expect((await callJson("/api/orderbook/XRPUSDT")).body, "nothing changed").toMatchObject({ sequence: book.sequence, bids: book.bids, asks: book.asks });
  });

  it("two spellings of one market keep one order on the channel", async () => {
    const key = await newPublishKey();
    const socket = await openSocket(await publishPath(key), "198.51.100.38");
    const base = (await callJson("/api/orderbook/SOLBTC?depth=1")).body.sequence as number;
    const spellings = ["SOLBTC", "SOL-BTC", "sol/btc", "sol_btc"];
    socket.ws.send(
      JSON.stringify({ id: 0, symbol: "SOLBTC", book: { type: "snapshot", sequence: base + 1, bids: [["0.0010000", "1.00"]], asks: [["0.0020000", "1.00"]] } }),
    );
    for (let i = 1; i <= 40; i++) {
      const book = { type: "delta", sequence: base + 1 + i, bids: [[`0.00${(10000 + i).toString()}`.slice(0, 9), "1.00"]], asks: [] };
      socket.ws.send(JSON.stringify({ id: i, symbol: spellings[i % spellings.length], book }));
    }
    await until(() => socket.messages.filter((m) => typeof m.id === "number").length === 41, { what: "41 answers" });
    expect(
      socket.messages.filter((m) => m.error).map((m) => m.error.code),
      "no gap from a second chain",
    ).toEqual([]);
    socket.ws.close();
  });

  it("a halt is in force before the 200; if the market cannot be told, 503 and nothing changes", async () => {
    const key = await newPublishKey();
    const halt = await call("/admin/markets/ETHBTC/status", json("PUT", { status: "HALTED" }));
    expect(halt.status).toBe(200);
    // An isolate with the registry as it was before the halt sends the old config: the market refuses.
    const trading = (await callJson("/admin/markets", { headers: ADMIN })).body.markets.find((m: { symbol: string }) => m.symbol === "ETHBTC");
    const stale = await (await hostOf("ETHBTC")).ingest({ ...trading, status: "TRADING", revision: trading.revision - 1 }, { trades: [] });
    expect(stale, "a batch checked against an older copy gets the newer config back").toMatchObject({ newerConfig: { status: "HALTED" } });
    const refused = await signedCall(key, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "ETHBTC", trades: [trade("halt-1", "0.05000", "1.000")] }) });
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([409, "MARKET_NOT_TRADING"]);
    expect((await call("/admin/markets/ETHBTC/status", json("PUT", { status: "TRADING" }))).status).toBe(200);

    // The market cannot be told (its object throws on the config it is sent): the change is undone, the answer 503.
    const market = await hostOf("ETHBTC");
    const misname = (symbol: string) =>
      runInDurableObject(market, (instance: MarketObject) => {
        (instance.engine("ETHBTC") as unknown as { state: { market: { symbol: string } } }).state.market.symbol = symbol;
      });
    await misname("NOTETHBTC");
    const failed = await call("/admin/markets/ETHBTC/status", json("PUT", { status: "HALTED" }));
    expect([failed.status, ((await failed.json()) as { code: string }).code]).toEqual([503, "UNAVAILABLE"]);
    const after = (await callJson("/admin/markets", { headers: ADMIN })).body.markets.find((m: { symbol: string }) => m.symbol === "ETHBTC");
    expect(after.status, "nothing changed").toBe("TRADING");
    await misname("ETHBTC");
    const audit = (await callJson(`/admin/audit?since=0&limit=500`, { headers: ADMIN })).body.data.filter((r: { target: string }) => r.target === "ETHBTC");
    expect(
      audit.slice(-2).map((r: { action: string }) => r.action),
      "the change and its undoing are both recorded",
    ).toEqual(["market.status", "market.revert"]);
  });

  it("a delisted market's streams refuse new subscriptions and end existing ones (STREAM_ENDED)", async () => {
    await call("/admin/assets", json("POST", { asset: "DLST", name: "Delisted", decimals: 6 }));
    await call(
      "/admin/markets",
      json("POST", { base: "DLST", quote: "USDT", tickSize: "0.01", stepSize: "0.1", minQty: "0.1", maxQty: "1000", minNotional: "1" }),
    );
    const socket = await openSocket("/api/ws?streams=book.DLSTUSDT,trades.DLSTUSDT,ticker.BTCUSDT", "198.51.100.39");
    await until(() => socket.messages.find((m) => m.stream === "book.DLSTUSDT"), { what: "the book snapshot" });
    expect((await call("/admin/markets/DLSTUSDT/status", json("PUT", { status: "DELISTED" }))).status).toBe(200);
    const group = Math.floor(
      (await callJson("/admin/markets", { headers: ADMIN })).body.markets.find((m: { symbol: string }) => m.symbol === "DLSTUSDT").ordinal / 64,
    );
    await runInDurableObject(hostOfGroup(group), (host: MarketObject) => host.relay.flush());
    const ended = await until(() => socket.messages.find((m) => m.error?.code === "STREAM_ENDED"), { what: "the end of the streams" });
    expect(ended.error.message).toContain("book.DLSTUSDT");
    socket.ws.send(JSON.stringify({ op: "list", id: 7 }));
    expect((await answerOf(socket, 7)).result.streams, "only the other market's stream is left").toEqual(["ticker.BTCUSDT"]);
    socket.ws.send(JSON.stringify({ op: "subscribe", id: 8, streams: ["book.DLSTUSDT"] }));
    expect((await answerOf(socket, 8)).error.code, "a new subscription is refused").toBe("UNKNOWN_STREAM");
    socket.ws.close();
  });

  it("a market delisted while a connection catches it up ends its streams there too: STREAM_ENDED names them, and nothing more of them comes", async () => {
    await call("/admin/assets", json("POST", { asset: "DLCU", name: "Delisted mid catch-up", decimals: 6 }));
    await call(
      "/admin/markets",
      json("POST", { base: "DLCU", quote: "USDT", tickSize: "0.01", stepSize: "0.1", minQty: "0.1", maxQty: "1000", minNotional: "0.01" }),
    );
    const symbol = "DLCUUSDT";
    const from = Date.now() - 1;
    await ingest(env, "*", { symbol, book: { type: "snapshot", sequence: 1, bids: [["1.00", "1.0"]], asks: [["1.01", "1.0"]] } });
    // 3,000 trades since `from`: more than a window, so the catch-up pauses.
    await ingestTrades(symbol, 3, 1_000, { prefix: "dlcu", price: "1.00", quantity: "0.1" });
    const socket = await openSocket(`/api/ws?streams=book.${symbol},trades.${symbol}&from=${from}`, "198.51.100.41");
    await until(() => socket.messages.find((m) => m.type === "paused"), { what: "the pause" });
    expect((await call(`/admin/markets/${symbol}/status`, json("PUT", { status: "DELISTED" }))).status).toBe(200);
    const group = Math.floor(
      (await callJson("/admin/markets", { headers: ADMIN })).body.markets.find((m: { symbol: string }) => m.symbol === symbol).ordinal / 64,
    );
    await runInDurableObject(hostOfGroup(group), (host: MarketObject) => host.relay.flush());
    const ended = await until(() => socket.messages.find((m) => m.error?.code === "STREAM_ENDED"), {
      what: "the end of the streams caught up (fails before: none came)",
    });
    expect(ended.error.message).toContain(`book.${symbol}`);
    expect(ended.error.message).toContain(`trades.${symbol}`);
    socket.ws.send(JSON.stringify({ op: "more", id: 9, token: socket.messages.findLast((m) => m.type === "paused").token }));
    socket.ws.send(JSON.stringify({ op: "list", id: 10 }));
    expect((await answerOf(socket, 10)).result.streams, "nothing of the market left").toEqual([]);
    const after = socket.messages.slice(socket.messages.indexOf(ended) + 1);
    expect(
      after.filter((m) => m.stream?.endsWith(symbol) || m.type === "live"),
      "no message of the ended streams after the end",
    ).toEqual([]);
    socket.ws.close();
  });

  it("a join lost on its way to the relay is healed: the shard asks again for a base that never came", async () => {
    const socket = await openSocket("/api/ws?streams=book.BTCUSDC", "198.51.100.40");
    await until(() => socket.messages.find((m) => m.stream === "book.BTCUSDC"), { what: "the first snapshot" });
    const shard = env.STREAM_HUB.getByName(await shardOfConnection("ip:198.51.100.40", ["BTCUSDC"]));
    const group = Math.floor(
      (await callJson("/admin/markets", { headers: ADMIN })).body.markets.find((m: { symbol: string }) => m.symbol === "BTCUSDC").ordinal / 64,
    );
    // The relay forgets the shard (as if the join never reached it); the shard waits for a base.
    await runInDurableObject(hostOfGroup(group), (host: MarketObject) => {
      (host.relay as unknown as { subscribers: Map<string, Set<string>> }).subscribers.delete("BTCUSDC");
    });
    await runInDurableObject(shard, (instance: object) => {
      const hub = (instance as { sources: { books: Map<string, unknown>; awaitingBase: Map<string, number> } }).sources;
      hub.books.delete("BTCUSDC");
      hub.awaitingBase.set("BTCUSDC", Date.now() - 60_000);
    });
    const before = socket.messages.filter((m) => m.stream === "book.BTCUSDC").length;
    await runDurableObjectAlarm(shard);
    await until(() => socket.messages.filter((m) => m.stream === "book.BTCUSDC").length > before, { what: "a new snapshot after the re-ask" });
    expect(socket.messages.filter((m) => m.stream === "book.BTCUSDC").at(-1).data.type).toBe("snapshot");
    socket.ws.close();
  });
});

describe("bounded memory and no 5xx from upgrades (docs/security.md#bounded-memory)", () => {
  it("1,000 distinct Binance URLs make no translation of their own; distinct kline questions stay within the copies' byte bound", {
    timeout: 120_000,
  }, async () => {
    expect((await call("/binance/api/v3/ticker/24hr?symbol=BTCUSDT", { ip: "10.9.9.9" })).status).toBe(200);
    for (let i = 0; i < 1000; i++) {
      // A parameter the endpoint does not read is refused (-1104) before anything is read or kept.
      const answer = await call(`/binance/api/v3/ticker/24hr?symbol=BTCUSDT&x=${i}`, { ip: `10.9.${i >> 8}.${i & 255}` });
      expect(answer.status, `request ${i}`).toBe(400);
    }
    expect(translations.size, "unknown parameters keep nothing").toBeLessThanOrEqual(1);
    expect(translations.bytes).toBeLessThanOrEqual(TRANSLATIONS_MAX_BYTES);
    for (let i = 0; i < 300; i++) await call(`/api/klines/BTCUSDT?interval=1m&limit=1000&startTime=${i}`, { ip: `10.10.${i >> 8}.${i & 255}` });
    expect(heldCopyBytes()).toBeLessThanOrEqual(COPIES_MAX_BYTES);
  });

  it("upgrades with control characters and odd encodings in stream names get 4xx or 101, never a 5xx", async () => {
    const names = ["btcusdt@trade%0Ax", "btcusdt@trade%00", "btcusdt@trade%0D%0Ax", "%E0%A4%A", "%FF%FE", "x".repeat(5000), "%20%09"];
    for (const [i, name] of names.entries()) {
      for (const path of [`/binance/ws/${name}`, `/binance/stream?streams=${name}`, `/api/ws?streams=${name}`]) {
        const response = await upgrade(path, `10.11.0.${i}`);
        expect(response.status, path).toBeLessThan(500);
        response.webSocket?.accept();
        response.webSocket?.close();
      }
    }
  });
});
