import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { fromBase64 } from "../../src/core/encoding";
import { unseal } from "../../src/core/seal";
import { ADMIN, approveGateway, callbackBody, deliver, settlementOf } from "../support/gateways";
import { call, callJson } from "../support/http";

const json = { ...ADMIN, "Content-Type": "application/json" };

/** Every operator route in the OpenAPI document, with its path parameters filled in. */
async function operatorRoutes(): Promise<{ method: string; path: string }[]> {
  const { body } = await callJson("/openapi.json");
  return Object.entries(body.paths as Record<string, Record<string, unknown>>)
    .filter(([path]) => path.startsWith("/admin/"))
    .flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path: path.replace("{pair}", "BTC-USDT").replace(/\{[^}]+\}/g, "x_1") })),
    );
}

describe("operator API: the bearer token (docs/signing.md)", () => {
  it("the OpenAPI document lists every operator route with the bearer scheme", async () => {
    const routes = await operatorRoutes();
    const listed = routes.map((r) => `${r.method} ${r.path}`).sort();
    expect(listed).toEqual(
      [
        "DELETE /admin/gateways/x_1",
        "DELETE /admin/gateways/x_1/secrets/x_1",
        "GET /admin/gateways",
        "GET /admin/gateways/x_1",
        "GET /admin/settlements",
        "GET /admin/gateways/x_1/settlements/x_1",
        "GET /admin/isolate",
        "GET /admin/assets",
        "PUT /admin/assets/x_1/status",
        "GET /admin/markets",
        "PATCH /admin/markets/BTC-USDT",
        "POST /admin/assets",
        "POST /admin/markets",
        "POST /admin/gateways",
        "POST /admin/gateways/x_1/secrets",
        "PUT /admin/markets/BTC-USDT/status",
        "POST /admin/publish-keys",
        "GET /admin/publish-keys",
        "PATCH /admin/publish-keys/x_1",
        "DELETE /admin/publish-keys/x_1",
        "GET /admin/audit",
        "POST /admin/streams/close",
        "POST /admin/markets/BTC-USDT/history/klines",
        "POST /admin/markets/BTC-USDT/history/book-files/x_1",
        "POST /admin/archive",
        "POST /admin/announcements",
        "GET /admin/announcements",
        "PATCH /admin/announcements/x_1",
        "DELETE /admin/announcements/x_1",
        "GET /admin/metrics",
      ].sort(),
    );
    const { body } = await callJson("/openapi.json");
    expect(body.paths["/admin/gateways"].post.security).toEqual([{ AdminToken: [] }]);
    const callback = body.paths["/api/gateway/callback"].post;
    expect(callback.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(
      ["header:X-GATEWAY-ID", "header:webhook-id", "header:webhook-signature", "header:webhook-timestamp"].sort(),
    );
    expect(Object.keys(callback.responses).sort()).toEqual(["200", "202", "400", "401", "409", "413", "415", "429", "503"]);
  });

  it("every operator route refuses a missing, wrong or malformed token with 401 UNAUTHENTICATED", async () => {
    for (const { method, path } of await operatorRoutes()) {
      for (const authorization of [
        undefined,
        "Bearer wrong-token",
        "Bearer test-admin-token-and-more",
        "Basic dGVzdC1hZG1pbi10b2tlbg==",
        "test-admin-token",
        "Bearer ",
      ]) {
        const headers: Record<string, string> = { "Content-Type": "application/json" };
        if (authorization !== undefined) headers.Authorization = authorization;
        const { status, body } = await callJson(path, { method, headers, body: method === "GET" || method === "DELETE" ? undefined : "{}" });
        expect([status, body.code], `${method} ${path} with ${authorization}`).toEqual([401, "UNAUTHENTICATED"]);
      }
    }
    // The scheme name is case-insensitive (RFC 9110).
    expect((await callJson("/admin/gateways", { headers: { Authorization: "bearer test-admin-token" } })).status).toBe(200);
  });

  it("wrong tokens count against the client IP like any failed authentication: the eleventh in a second is 429", async () => {
    const ip = "203.0.113.90";
    const answers: Response[] = [];
    for (let i = 0; i < 11; i++) answers.push(await call("/admin/gateways", { ip, headers: { Authorization: `Bearer guess-${i}` } }));
    expect(answers.map((r) => r.status)).toEqual([...Array(10).fill(401), 429]);
    expect(answers.slice(0, 10).map((r) => r.headers.get("RateLimit-Remaining"))).toEqual(["9", "8", "7", "6", "5", "4", "3", "2", "1", "0"]);
    expect(answers[10]!.headers.get("Retry-After")).toBe("1");
    // The right token is not limited: operators are not throttled by their own address's guesses.
    expect((await call("/admin/gateways", { ip, headers: ADMIN })).status).toBe(200);
  });

  it("without ADMIN_TOKEN configured, every operator route answers 503 NOT_CONFIGURED — there is no default token", async () => {
    const app = createApp();
    for (const { method, path } of await operatorRoutes()) {
      for (const token of [undefined, ""]) {
        const response = await app.request(path, { method, headers: { ...json, Authorization: "Bearer " } }, { ...env, ADMIN_TOKEN: token });
        expect(response.status, `${method} ${path}`).toBe(503);
        expect(((await response.json()) as { code: string }).code).toBe("NOT_CONFIGURED");
      }
    }
  });
});

describe("operator API: gateways and their secrets", () => {
  it("approving shows the whsec_ secret once; it is stored sealed and never shown again", async () => {
    const response = await callJson("/admin/gateways", { method: "POST", headers: json, body: JSON.stringify({ name: "Acme Chain Gateway" }) });
    expect(response.status).toBe(201);
    const { id, secret } = response.body;
    expect(response.body).toMatchObject({ name: "Acme Chain Gateway", status: "active", revokedAt: null, secrets: [{ id: secret.id, status: "active" }] });
    expect(secret.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(fromBase64(secret.secret.slice("whsec_".length))).toHaveLength(32);

    const readings = [await call(`/admin/gateways/${id}`, { headers: ADMIN }), await call("/admin/gateways", { headers: ADMIN })];
    for (const reading of readings) {
      expect(reading.status).toBe(200);
      const text = await reading.text();
      expect(text).toContain(id);
      expect(text).not.toContain(secret.secret.slice("whsec_".length, 20));
    }
    const row = await env.DB.prepare("SELECT sealed_secret FROM gateway_secrets WHERE id = ?").bind(secret.id).first<{ sealed_secret: string }>();
    expect(row!.sealed_secret).toMatch(/^v1\./);
    expect(row!.sealed_secret).not.toContain(secret.secret.slice("whsec_".length, 20));
    expect(await unseal(env.SEALING_KEY, row!.sealed_secret, secret.id)).toBe(secret.secret);
    // Sealed under its own id: the sealed value does not open as another secret's.
    await expect(unseal(env.SEALING_KEY, row!.sealed_secret, "whk_other")).rejects.toThrow();
  });

  it("approval checks its body", async () => {
    for (const body of ["{}", '{"name":""}', '{"name":"   "}', `{"name":"${"x".repeat(101)}"}`, '{"name":', "[]"]) {
      const { status, body: problem } = await callJson("/admin/gateways", { method: "POST", headers: json, body });
      expect([status, problem.code], body).toEqual([400, "VALIDATION_FAILED"]);
    }
  });

  it("rotation adds a second active secret; a third is refused, even when asked for at once", async () => {
    const gateway = await approveGateway();
    const attempts = await Promise.all(Array.from({ length: 6 }, () => callJson(`/admin/gateways/${gateway.id}/secrets`, { method: "POST", headers: ADMIN })));
    const created = attempts.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    expect(attempts.filter((a) => a.status === 400 && a.body.code === "VALIDATION_FAILED")).toHaveLength(5);
    expect(created[0]!.body.secret).toMatch(/^whsec_/);
    const { body } = await callJson(`/admin/gateways/${gateway.id}`, { headers: ADMIN });
    expect(body.secrets.map((s: any) => s.status)).toEqual(["active", "active"]);

    // Retire the old one explicitly; then there is room for the next rotation.
    expect((await call(`/admin/gateways/${gateway.id}/secrets/${gateway.secretId}`, { method: "DELETE", headers: ADMIN })).status).toBe(204);
    const again = await callJson(`/admin/gateways/${gateway.id}/secrets/${gateway.secretId}`, { method: "DELETE", headers: ADMIN });
    expect([again.status, again.body.code]).toEqual([404, "NOT_FOUND"]);
    const after = await callJson(`/admin/gateways/${gateway.id}`, { headers: ADMIN });
    expect(after.body.secrets.find((s: any) => s.id === gateway.secretId)).toMatchObject({ status: "retired", retiredAt: expect.any(Number) });
    expect((await callJson(`/admin/gateways/${gateway.id}/secrets`, { method: "POST", headers: ADMIN })).status).toBe(201);
  });

  it("a secret can only be retired on its own gateway", async () => {
    const [a, b] = [await approveGateway(), await approveGateway()];
    const crossed = await callJson(`/admin/gateways/${b.id}/secrets/${a.secretId}`, { method: "DELETE", headers: ADMIN });
    expect([crossed.status, crossed.body.code]).toEqual([404, "NOT_FOUND"]);
    expect((await deliver(a, callbackBody(a.id, { settlementId: "stl_cross", sequence: 1, status: "pending" }))).status).toBe(200);
  });

  it("revoking a gateway refuses its callbacks from the next one on; it cannot be rotated or revoked again", async () => {
    const gateway = await approveGateway();
    expect((await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rv", sequence: 1, status: "pending" }))).status).toBe(200);
    expect((await call(`/admin/gateways/${gateway.id}`, { method: "DELETE", headers: ADMIN })).status).toBe(204);
    const refused = await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rv", sequence: 2, status: "confirming" }));
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([401, "UNKNOWN_GATEWAY"]);
    expect((await callJson(`/admin/gateways/${gateway.id}`, { headers: ADMIN })).body).toMatchObject({ status: "revoked", revokedAt: expect.any(Number) });
    expect((await callJson(`/admin/gateways/${gateway.id}`, { method: "DELETE", headers: ADMIN })).status).toBe(404);
    expect((await callJson(`/admin/gateways/${gateway.id}/secrets`, { method: "POST", headers: ADMIN })).status).toBe(404);
    // Its settlements stay readable.
    expect((await settlementOf(gateway, "stl_rv")).body.settlement.status).toBe("pending");
  });

  it("unknown gateways are 404 NOT_FOUND", async () => {
    for (const [method, path] of [
      ["GET", "/admin/gateways/gw_nobody"],
      ["DELETE", "/admin/gateways/gw_nobody"],
      ["POST", "/admin/gateways/gw_nobody/secrets"],
      ["DELETE", "/admin/gateways/gw_nobody/secrets/whk_nobody"],
    ] as const) {
      const { status, body } = await callJson(path, { method, headers: ADMIN });
      expect([status, body.code], `${method} ${path}`).toEqual([404, "NOT_FOUND"]);
    }
  });
});

describe("operator API: settlements", () => {
  it("lists settlements filtered by status and gateway, newest first, in cursor pages", async () => {
    const gateway = await approveGateway();
    for (let i = 0; i < 5; i++)
      await deliver(gateway, callbackBody(gateway.id, { settlementId: `stl_page_${i}`, sequence: 1, status: i % 2 ? "pending" : "confirming" }));
    const pages: any[] = [];
    let cursor: string | null = null;
    do {
      // Pasted into the query string as it is: the cursor is URL-safe.
      const query: string = `/admin/settlements?gatewayId=${gateway.id}&limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const { status, body } = await callJson(query, { headers: ADMIN });
      expect(status).toBe(200);
      expect(body.data.length).toBeLessThanOrEqual(2);
      pages.push(...body.data);
      cursor = body.nextCursor;
      if (cursor) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (cursor);
    expect(pages.map((s) => s.id)).toEqual([4, 3, 2, 1, 0].map((i) => `stl_page_${i}`));
    expect(
      pages.filter((s) => s.gatewayId !== gateway.id || s.amount !== "1250.500000"),
      "settlements of another gateway or amount",
    ).toEqual([]);

    const pending = await callJson(`/admin/settlements?gatewayId=${gateway.id}&status=pending`, { headers: ADMIN });
    expect(pending.body.data.map((s: any) => s.id)).toEqual(["stl_page_3", "stl_page_1"]);
    expect(pending.body.nextCursor).toBeNull();
    const none = await callJson(`/admin/settlements?gatewayId=${gateway.id}&status=finalized`, { headers: ADMIN });
    expect(none.body).toEqual({ data: [], nextCursor: null });
  });

  it("refuses bad filters and cursors with 400 VALIDATION_FAILED", async () => {
    for (const query of ["limit=0", "limit=201", "limit=abc", "status=done", "cursor=garbage", `cursor=${btoa("[1,2]")}`, `gatewayId=${"g".repeat(65)}`]) {
      const { status, body } = await callJson(`/admin/settlements?${query}`, { headers: ADMIN });
      expect([status, body.code], query).toEqual([400, "VALIDATION_FAILED"]);
      expect(body.errors.length, query).toBeGreaterThan(0);
    }
  });

  it("a settlement reads with its append-only history: a reorg is a new entry, nothing is edited", async () => {
    const gateway = await approveGateway();
    const path = ["pending", "confirming", "confirmed", "reorged", "confirming", "confirmed", "finalized"];
    for (const [i, status] of path.entries()) await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_reorg", sequence: i + 1, status }));
    const before = (await settlementOf(gateway, "stl_reorg")).body;
    expect(before.settlement).toMatchObject({ id: "stl_reorg", status: "finalized", sequence: 7 });
    expect(before.history.map((t: any) => [t.sequence, t.from, t.to])).toEqual(path.map((to, i) => [i + 1, i === 0 ? null : path[i - 1], to]));
    // A late, illegal event is kept as an event but changes no history entry.
    await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_reorg", sequence: 8, status: "pending" }));
    const after = (await settlementOf(gateway, "stl_reorg")).body;
    expect(after.history).toEqual(before.history);
    expect(after.events.at(-1)).toMatchObject({ sequence: 8, status: "pending", outcome: "quarantined" });
    expect(after.settlement.status).toBe("finalized");
  });

  it("an unknown settlement is 404 NOT_FOUND", async () => {
    const { status, body } = await settlementOf(await approveGateway(), "stl_never");
    expect([status, body.code]).toEqual([404, "NOT_FOUND"]);
  });
});

describe("operator API: market status (docs/api.md)", () => {
  const put = (pair: string, status: unknown) => callJson(`/admin/markets/${pair}/status`, { method: "PUT", headers: json, body: JSON.stringify({ status }) });

  it("TRADING ⇄ HALTED, either → DELISTED, which is final", async () => {
    expect((await put("ETH-BTC", "HALTED")).body).toMatchObject({ symbol: "ETHBTC", status: "HALTED" });
    expect((await put("eth-btc", "TRADING")).body).toMatchObject({ symbol: "ETHBTC", status: "TRADING" });
    expect((await put("ETHBTC", "HALTED")).status).toBe(200);
    expect((await put("ETHBTC", "DELISTED")).body.status).toBe("DELISTED");
    for (const status of ["TRADING", "HALTED"]) {
      const { status: code, body } = await put("ETHBTC", status);
      expect([code, body.code]).toEqual([409, "MARKET_NOT_TRADING"]);
    }
    // A delisted market is gone from the public surface.
    const ticker = await callJson("/api/ticker/ETH-BTC");
    expect([ticker.status, ticker.body.code]).toEqual([404, "UNKNOWN_SYMBOL"]);
  });

  it("refuses unknown statuses and markets", async () => {
    for (const status of ["PAUSED", "trading", 1, null]) expect((await put("SOL-BTC", status)).body.code).toBe("VALIDATION_FAILED");
    expect((await put("DOGE-USDT", "HALTED")).body.code).toBe("UNKNOWN_SYMBOL");
    expect((await put("not a pair!", "HALTED")).body.code).toBe("INVALID_SYMBOL");
  });
});
