import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { KeyRecord } from "../../src/access/keys";
import { sign, signaturePayload } from "../../src/access/signature";
import { accessGuard, keyGate } from "../../src/core/object-ids";
import { ingest } from "../../src/market/ingest";
import { INGEST_MAX_BYTES } from "../../src/v1/routes";
import { newAccount, newKey, newPublishKey, signedCall } from "../support/accounts";
import { call, callJson } from "../support/http";
import { withoutMoment } from "../support/window-moment";

async function problemOf(response: Response) {
  expect(response.headers.get("Content-Type")).toBe("application/problem+json");
  return (await response.json()) as { code: string; detail: string; serverTime?: number };
}

describe("signed endpoints (docs/api.md, docs/signing.md)", () => {
  it("GET /v1/ticker/24hr with a valid signature returns the same record as /api/ticker", async () => {
    await ingest(env, "*", { symbol: "BTCUSDT", trades: [{ id: "s1", price: "97000.10", quantity: "0.5", side: "buy", time: Date.now() - 100 }] });
    const key = await newKey();
    const response = await signedCall(key, "GET", "/v1/ticker/24hr?symbol=BTCUSDT");
    expect(response.status).toBe(200);
    expect(response.headers.get("RateLimit-Limit")).toBe("30");
    const signed = (await response.json()) as Record<string, unknown>;
    const open = (await callJson("/api/ticker/BTCUSDT")).body;
    expect(withoutMoment(signed)).toEqual(withoutMoment(open as object));
    const many = await signedCall(key, "GET", "/v1/ticker/24hr?symbols=BTCUSDT,ETHUSDT");
    expect(((await many.json()) as { symbol: string }[]).map((t) => t.symbol)).toEqual(["BTCUSDT", "ETHUSDT"]);
    const all = await signedCall(key, "GET", "/v1/ticker/24hr");
    expect(((await all.json()) as unknown[]).length).toBe(7);
  });

  it("every other read has its signed form", async () => {
    const key = await newKey();
    for (const target of [
      "/v1/orderbook?symbol=BTCUSDT&depth=5",
      "/v1/prices?quote=USDT",
      "/v1/trades?symbol=BTCUSDT&limit=2",
      "/v1/klines?symbol=BTCUSDT&interval=1h",
      "/v1/markets",
    ]) {
      expect((await signedCall(key, "GET", target)).status, target).toBe(200);
    }
    expect((await problemOf(await signedCall(key, "GET", "/v1/orderbook?symbol=DOGEUSDT"))).code).toBe("UNKNOWN_SYMBOL");
  });

  it("each failure of section 4 has its status and code", async () => {
    const key = await newKey();
    const target = "/v1/ticker/24hr?symbol=BTCUSDT";
    const missing = await call(target, { headers: { "X-API-KEY": key.id } });
    expect(missing.status).toBe(401);
    expect((await problemOf(missing)).detail).toContain("X-TIMESTAMP");
    const badSig = await signedCall(key, "GET", target, { signatureOverride: "zz".repeat(32) });
    expect(badSig.status).toBe(401);
    expect((await problemOf(badSig)).code).toBe("MALFORMED_CREDENTIALS");
    const wrong = await signedCall(key, "GET", target, { signatureOverride: "ab".repeat(32) });
    expect([wrong.status, (await problemOf(wrong)).code]).toEqual([401, "INVALID_SIGNATURE"]);
    // The read ran while the key was checked; its answer and its caching headers are dropped.
    expect([wrong.headers.get("Cache-Control"), wrong.headers.get("X-As-Of")], "the read's headers on the 401").toEqual([null, null]);
    const unknown = await signedCall({ id: "mk_000000000000000000000000", secret: "x" }, "GET", target);
    expect([unknown.status, (await problemOf(unknown)).code]).toEqual([401, "INVALID_API_KEY"]);
    const stale = await signedCall(key, "GET", target, { timestamp: Date.now() - 60_000 });
    const staleBody = await problemOf(stale);
    expect([stale.status, staleBody.code]).toEqual([401, "TIMESTAMP_OUT_OF_WINDOW"]);
    expect(staleBody.serverTime).toBeGreaterThan(0);
    const badWindow = await signedCall(key, "GET", target, { headers: { "X-RECV-WINDOW": "60001" } });
    expect((await problemOf(badWindow)).detail).toContain("X-RECV-WINDOW");
  });

  it("each header of section 4 is named when it is missing or malformed, with a code that says which", async () => {
    const key = await newKey();
    const target = "/v1/markets";
    const timestamp = String(Date.now());
    const cases: [Record<string, string>, string, string][] = [
      [{}, "X-API-KEY is missing", "MISSING_CREDENTIALS"],
      [{ "X-API-KEY": "not-a-key", "X-TIMESTAMP": timestamp, "X-SIGNATURE": "ab".repeat(32) }, "X-API-KEY is not an API key id", "INVALID_API_KEY"],
      [{ "X-API-KEY": key.id, "X-SIGNATURE": "ab".repeat(32) }, "X-TIMESTAMP is missing", "MISSING_CREDENTIALS"],
      [{ "X-API-KEY": key.id, "X-TIMESTAMP": "1.5e12", "X-SIGNATURE": "ab".repeat(32) }, "X-TIMESTAMP is malformed", "MALFORMED_CREDENTIALS"],
      [{ "X-API-KEY": key.id, "X-TIMESTAMP": `00${timestamp}`, "X-SIGNATURE": "ab".repeat(32) }, "X-TIMESTAMP is malformed", "MALFORMED_CREDENTIALS"],
      [{ "X-API-KEY": key.id, "X-TIMESTAMP": timestamp }, "X-SIGNATURE is missing", "MISSING_CREDENTIALS"],
      [{ "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": "ab".repeat(31) }, "X-SIGNATURE is malformed", "MALFORMED_CREDENTIALS"],
      [
        { "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": "ab".repeat(32), "X-RECV-WINDOW": "0" },
        "X-RECV-WINDOW is malformed",
        "MALFORMED_CREDENTIALS",
      ],
      [
        { "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": "ab".repeat(32), "X-RECV-WINDOW": "05000" },
        "X-RECV-WINDOW is malformed",
        "MALFORMED_CREDENTIALS",
      ],
    ];
    for (const [headers, detail, code] of cases) {
      const response = await call(target, { headers });
      const body = await problemOf(response);
      expect([response.status, body.code], detail).toEqual([401, code]);
      expect(body.detail).toContain(detail);
    }
  });

  it("X-RECV-WINDOW widens the window up to 60 s; more than 1 s ahead of the server is refused", async () => {
    const key = await newKey();
    const target = "/v1/markets";
    const old = Date.now() - 30_000;
    expect((await signedCall(key, "GET", target, { timestamp: old })).status).toBe(401);
    expect((await signedCall(key, "GET", target, { timestamp: old, headers: { "X-RECV-WINDOW": "60000" } })).status).toBe(200);
    const late = await signedCall(key, "GET", target, { timestamp: Date.now() - 500, headers: { "X-RECV-WINDOW": "100" } });
    expect((await problemOf(late)).code).toBe("TIMESTAMP_OUT_OF_WINDOW");
    const ahead = await signedCall(key, "GET", target, { timestamp: Date.now() + 3_000 });
    const body = await problemOf(ahead);
    expect([ahead.status, body.code]).toEqual([401, "TIMESTAMP_OUT_OF_WINDOW"]);
    expect(Math.abs(body.serverTime! - Date.now())).toBeLessThan(2_000);
    expect((await signedCall(key, "GET", target, { timestamp: Date.now() + 500 })).status).toBe(200);
  });

  it("the signature covers the query exactly as sent: reordering it breaks the signature", async () => {
    const key = await newKey();
    const timestamp = Date.now();
    const signed = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: "/v1/orderbook?symbol=BTCUSDT&depth=5", body: "" }));
    const reordered = await call("/v1/orderbook?depth=5&symbol=BTCUSDT", {
      headers: { "X-API-KEY": key.id, "X-TIMESTAMP": String(timestamp), "X-SIGNATURE": signed },
    });
    expect((await problemOf(reordered)).code).toBe("INVALID_SIGNATURE");
    const asSigned = await call("/v1/orderbook?symbol=BTCUSDT&depth=5", {
      headers: { "X-API-KEY": key.id, "X-TIMESTAMP": String(timestamp), "X-SIGNATURE": signed.toUpperCase() },
    });
    expect(asSigned.status).toBe(200);
  });

  it("the OpenAPI document describes the signature headers as a security scheme on every /v1 endpoint", async () => {
    const doc = (await callJson("/openapi.json")).body;
    expect(Object.keys(doc.components.securitySchemes)).toEqual(expect.arrayContaining(["ApiKey", "Signature", "Timestamp"]));
    expect(doc.components.securitySchemes.Signature).toMatchObject({ type: "apiKey", in: "header", name: "X-SIGNATURE" });
    for (const path of ["/v1/ticker/24hr", "/v1/orderbook", "/v1/prices", "/v1/trades", "/v1/klines", "/v1/markets"]) {
      expect(doc.paths[path].get.security, path).toEqual([{ ApiKey: [], Signature: [], Timestamp: [] }]);
    }
    expect(doc.paths["/v1/ingest"].post.security).toEqual([{ ApiKey: [], Signature: [], Timestamp: [] }]);
  });

  it("read cannot ingest; publish can, through the same ingest path as the demo feed", async () => {
    const body = JSON.stringify({ symbol: "ETHUSDT", trades: [{ id: "p1", price: "3400.5", quantity: "1", side: "sell", time: Date.now() - 10 }] });
    const reader = await newKey({ permissions: ["read"] });
    const refused = await signedCall(reader, "POST", "/v1/ingest", { body });
    expect([refused.status, (await problemOf(refused)).code]).toEqual([403, "PERMISSION_DENIED"]);
    const publisher = await newPublishKey();
    const accepted = await signedCall(publisher, "POST", "/v1/ingest", { body });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({ symbol: "ETHUSDT", acceptedTrades: 1, duplicateTrades: 0, sequence: 0 });
    const again = await signedCall(publisher, "POST", "/v1/ingest", { body });
    expect(await again.json()).toMatchObject({ acceptedTrades: 0, duplicateTrades: 1 });
  });

  it("ingest refuses a wrong content type (415), an oversized body (413) and a bad batch (400)", async () => {
    const publisher = await newPublishKey();
    const text = await signedCall(publisher, "POST", "/v1/ingest", { body: "symbol=BTCUSDT", headers: { "Content-Type": "text/plain" } });
    expect([text.status, (await problemOf(text)).code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    const huge = JSON.stringify({ symbol: "BTCUSDT", trades: [], pad: "x".repeat(INGEST_MAX_BYTES) });
    const big = await signedCall(publisher, "POST", "/v1/ingest", { body: huge });
    expect([big.status, (await problemOf(big)).code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
    const crossed = JSON.stringify({ symbol: "BTCUSDT", book: { type: "snapshot", sequence: 1, bids: [["100", "1"]], asks: [["99", "1"]] } });
    const bad = await signedCall(publisher, "POST", "/v1/ingest", { body: crossed });
    expect([bad.status, (await problemOf(bad)).code]).toEqual([400, "VALIDATION_FAILED"]);
    const truncated = await signedCall(publisher, "POST", "/v1/ingest", { body: '{"symbol":"BTCUSDT","trades":[' });
    expect([truncated.status, (await problemOf(truncated)).code]).toEqual([400, "VALIDATION_FAILED"]);
  });

  it("a revoked key fails on the very next request; an expired key fails", async () => {
    const key = await newKey();
    const target = "/v1/markets";
    expect((await signedCall(key, "GET", target)).status).toBe(200);
    const revoke = await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: key.cookie } });
    expect(revoke.status).toBe(204);
    const after = await signedCall(key, "GET", target);
    expect([after.status, (await problemOf(after)).code]).toEqual([401, "INVALID_API_KEY"]);

    const soon = await newKey({ expiresAt: Date.now() + 60_000 });
    expect((await signedCall(soon, "GET", target)).status).toBe(200);
    // Its expiry comes (moved to the past where it is kept, rather than waited for).
    const past = Date.now() - 1;
    await runInDurableObject(accessGuard(env, `key:${soon.id}`), async (_guard, state) => {
      const record = (await state.storage.get<KeyRecord>("key"))!;
      await state.storage.put("key", { ...record, expiresAt: past });
    });
    await evictDurableObject(accessGuard(env, `key:${soon.id}`));
    // The key's gate holds the record it read (docs/limits.md#key-gates): restarted, it reads it again.
    await evictDurableObject(keyGate(env, soon.id));
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?").bind(past, soon.id).run();
    const expired = await signedCall(soon, "GET", target);
    expect([expired.status, (await problemOf(expired)).code]).toEqual([401, "INVALID_API_KEY"]);
    const listed = (await callJson("/account/api-keys", { headers: { Cookie: soon.cookie } })).body.keys;
    expect(listed[0].status).toBe("expired");
  });

  it("the allow-list admits addresses inside its IPv4 and IPv6 ranges and refuses the rest", async () => {
    const key = await newKey({ allowCidrs: ["203.0.113.0/24", "2001:db8::/126"] });
    const from = async (ip: string) => (await signedCall(key, "GET", "/v1/markets", { ip })).status;
    expect(await from("203.0.113.0")).toBe(200);
    expect(await from("203.0.113.255")).toBe(200);
    expect(await from("203.0.114.0")).toBe(403);
    expect(await from("2001:db8::3")).toBe(200);
    expect(await from("2001:db8::4")).toBe(403);
    expect(await from("::ffff:203.0.113.9")).toBe(200);
    const refused = await signedCall(key, "GET", "/v1/markets", { ip: "198.51.100.1" });
    expect((await problemOf(refused)).code).toBe("IP_NOT_ALLOWED");
  });

  it("the secret is returned once, never listed, and stored nowhere in plain text", async () => {
    const { cookie } = await newAccount();
    const key = await newKey({ cookie });
    const list = await call("/account/api-keys", { headers: { Cookie: cookie } });
    const text = await list.text();
    expect(text).toContain(key.id);
    expect(text).not.toContain(key.secret);
    const rows = await env.DB.prepare("SELECT * FROM api_keys").all();
    expect(JSON.stringify(rows.results)).not.toContain(key.secret);
    const stored = await runInDurableObject(env.ACCESS_GUARD.getByName(`key:${key.id}`), async (_instance, state) => {
      const entries = await state.storage.list();
      return JSON.stringify([...entries]);
    });
    expect(stored).toContain(key.id);
    expect(stored).not.toContain(key.secret);
    // The dashboard page does not show it either.
    const page = await (await call("/dashboard", { headers: { Cookie: cookie } })).text();
    expect(page).toContain(key.id);
    expect(page).not.toContain(key.secret);
  });
});
