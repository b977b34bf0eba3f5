import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { LocalRefusals } from "../../src/access/local-refusals";
import { admit, GATEWAY_LIMIT } from "../../src/access/rate-limit";
import { accessGuard, objectCalls } from "../../src/core/object-ids";
import type { ProblemError } from "../../src/core/problem";
import { newKey, newPublishKey, signedCall } from "../support/accounts";
import { approveGateway, callbackBody, deliver } from "../support/gateways";
import { call } from "../support/http";

async function burst(count: number, send: () => Promise<Response>) {
  const responses = await Promise.all(Array.from({ length: count }, send));
  return { ok: responses.filter((r) => r.status === 200), limited: responses.filter((r) => r.status === 429) };
}

describe("rate limits (docs/limits.md): exact, per IP and per key", () => {
  // The isolate's first request waits for its registry copy; the bursts below measure the limiter alone.
  beforeAll(async () => {
    await call("/api/time", { ip: "198.51.100.250" });
  });

  it("a burst of 50 concurrent public requests from one IP admits exactly 10; the rest get 429 with headers", async () => {
    const { ok, limited } = await burst(50, () => call("/api/time", { ip: "203.0.113.50" }));
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(40);
    for (const response of ok) expect(response.headers.get("RateLimit-Limit")).toBe("10");
    expect(ok.map((r) => Number(r.headers.get("RateLimit-Remaining"))).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const refused of limited) {
      expect(refused.headers.get("Content-Type")).toBe("application/problem+json");
      expect(refused.headers.get("RateLimit-Limit")).toBe("10");
      expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
      expect(refused.headers.get("RateLimit-Reset")).toBe("1");
      expect(refused.headers.get("Retry-After")).toBe("1");
      const body = (await refused.json()) as { code: string; status: number; retryAfterMs: number; detail: string };
      expect([body.status, body.code]).toEqual([429, "RATE_LIMITED"]);
      expect(body.detail).toBe("10 requests per second per IP");
      expect(body.retryAfterMs).toBeGreaterThan(0);
      expect(body.retryAfterMs).toBeLessThanOrEqual(1000);
    }
  });

  it("after the window passes, requests are admitted again: exactly when the oldest admission leaves it", async () => {
    // The guard's own clock, injected: the 11th is refused until the first admission is 1,000 ms old.
    const guard = accessGuard(env, "ip:203.0.113.51");
    const t = 1_800_000_000_000;
    for (let i = 0; i < 10; i++) expect((await guard.admit(10, t + i)).allowed, `admission ${i + 1}`).toBe(true);
    const refused = await guard.admit(10, t + 999);
    expect([refused.allowed, refused.resetMs]).toEqual([false, 1]);
    expect((await guard.admit(10, t + 1000)).allowed, "at t + 1000 the first admission has left the window").toBe(true);
    expect((await guard.admit(10, t + 1000)).allowed, "one slot freed, one taken").toBe(false);
  });

  it("a flood from one address: after the guard's first refusal, the isolate refuses by itself until the reset (counted calls)", async () => {
    const ip = "203.0.113.63";
    const answers: Response[] = [];
    const callsAfter: number[] = [];
    for (let i = 0; i < 25; i++) {
      answers.push(await call("/api/time", { ip }));
      callsAfter.push(objectCalls.guard + objectCalls.gate);
    }
    const statuses = answers.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 200),
      "admitted",
    ).toHaveLength(10);
    expect(
      statuses.slice(10).filter((s) => s !== 429),
      "refused after the tenth",
    ).toEqual([]);
    // Each admission and the first refusal asked the address's gate; the fourteen after it did not.
    expect(callsAfter[24]! - callsAfter[10]!, "gate calls after the first refusal").toBe(0);
    expect(callsAfter[10]! - callsAfter[0]!, "gate calls from the second request to the first refusal").toBe(10);
    // The local refusal is the guard's, word for word: same body and headers.
    const [first, local] = [answers[10]!, answers[24]!];
    const names = (r: Response) => [...r.headers.keys()].sort();
    expect(names(local), "the local refusal's headers").toEqual(names(first));
    for (const header of ["RateLimit-Limit", "RateLimit-Remaining", "Content-Type", "Content-Security-Policy", "Strict-Transport-Security"])
      expect(local.headers.get(header), header).toBe(first.headers.get(header));
    expect(Number(local.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    const [firstBody, localBody] = [(await first.json()) as Record<string, unknown>, (await local.json()) as Record<string, unknown>];
    expect({ ...localBody, requestId: undefined, retryAfterMs: undefined }).toEqual({ ...firstBody, requestId: undefined, retryAfterMs: undefined });
    expect(localBody.retryAfterMs as number).toBeLessThanOrEqual(firstBody.retryAfterMs as number);
  });

  it("an address refused here is refused without a guard call on every route its limit stands in front of, and only there", async () => {
    const ip = "203.0.113.64";
    for (let i = 0; i < 11; i++) await call("/api/time", { ip });
    const calls = objectCalls.guard;
    const head = await call("/api/ticker/BTCUSDT", { ip, method: "HEAD" });
    expect([head.status, head.headers.get("RateLimit-Remaining"), await head.text()], "HEAD: the 429's headers, no body").toEqual([429, "0", ""]);
    expect((await call("/api/ws", { ip })).status, "the stream upgrade's route: limit first").toBe(429);
    expect((await call("/api/no-such-route", { ip })).status, "no route: 404 as for anyone").toBe(404);
    expect((await call("/api/ticker/BTCUSDT", { ip, method: "DELETE" })).status, "no DELETE route: 405 as for anyone").toBe(405);
    // The account API keeps its no-store on the 429 too.
    const account = await call("/account/api-keys", { ip });
    expect([account.status, account.headers.get("Cache-Control")]).toEqual([429, "no-store"]);
    expect(objectCalls.guard - calls, "guard calls for the refused address").toBe(0);
  });

  it("local refusals last exactly until the guard's reset", () => {
    const principal = "ip:local-refusal-test";
    const refusals = new LocalRefusals();
    refusals.remember(principal, { allowed: false, limit: 10, remaining: 0, resetMs: 400 }, 1_000);
    expect(refusals.refusal(principal, 1_000)).toEqual({ allowed: false, limit: 10, remaining: 0, resetMs: 400 });
    expect(refusals.refusal(principal, 1_399)?.resetMs).toBe(1);
    expect(refusals.refusal(principal, 1_400), "at the reset the guard decides again").toBeUndefined();
  });

  it("two IPs do not share a budget", async () => {
    const first = await burst(15, () => call("/api/time", { ip: "203.0.113.52" }));
    const second = await burst(15, () => call("/api/time", { ip: "2001:db8::52" }));
    expect(first.ok).toHaveLength(10);
    expect(second.ok).toHaveLength(10);
  });

  it("concurrent reads from several IPs: exactly 10 each, and a refused read gets the problem, never the data", async () => {
    const ips = ["198.19.7.1", "198.19.7.2", "198.19.200.3"];
    const bursts = await Promise.all(ips.map((ip) => burst(14, () => call("/api/ticker/BTCUSDT", { ip }))));
    for (const { ok, limited } of bursts) {
      expect(ok).toHaveLength(10);
      expect(limited).toHaveLength(4);
      for (const refused of limited) {
        const body = (await refused.json()) as { code: string; symbol?: string };
        expect(body.code).toBe("RATE_LIMITED");
        expect(body.symbol).toBeUndefined();
        // Nor the data's headers: a 429 is not a cacheable copy of a moment of the market.
        for (const header of ["Cache-Control", "Age", "X-As-Of"]) expect(refused.headers.get(header), `${header} on a refused read`).toBeNull();
      }
    }
  });

  it("a request with effects waits for its admission: refused sign-ups create no account", async () => {
    const ip = "198.19.9.9";
    const stamp = Date.now().toString(36);
    const emails = Array.from({ length: 13 }, (_, i) => `limit-${stamp}-${i}@example.test`);
    const responses = await Promise.all(
      emails.map((email) =>
        call("/account/signup", {
          ip,
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ email, password: "correct horse battery staple" }),
        }),
      ),
    );
    const refused = emails.filter((_, i) => responses[i]!.status === 429);
    expect(refused).toHaveLength(3);
    for (const email of refused) {
      const signIn = await call("/account/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ email, password: "correct horse battery staple" }),
      });
      expect(signIn.status).toBe(401);
    }
  });

  it("a key is admitted 30 times in a second, from any number of IPs", async () => {
    const key = await newKey();
    let n = 0;
    const { ok, limited } = await burst(45, () => signedCall(key, "GET", "/v1/markets", { ip: `198.18.0.${++n}` }));
    expect(ok).toHaveLength(30);
    expect(limited).toHaveLength(15);
    expect(ok[0]!.headers.get("RateLimit-Limit")).toBe("30");
    expect(((await limited[0]!.json()) as { code: string }).code).toBe("RATE_LIMITED");
  });

  it("failed authentications count against the client IP's public limit", async () => {
    const ip = "203.0.113.53";
    const bad = { id: "mk_000000000000000000000000", secret: "nope" };
    const statuses = (await Promise.all(Array.from({ length: 14 }, () => signedCall(bad, "GET", "/v1/markets", { ip })))).map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
    expect((await call("/api/time", { ip })).status).toBe(429);
  });

  it("error answers of limited routes carry the headers too", async () => {
    const ip = "203.0.113.54";
    const unknown = await call("/api/ticker/DOGEUSDT", { ip });
    expect(unknown.status).toBe(404);
    expect([unknown.headers.get("RateLimit-Limit"), unknown.headers.get("RateLimit-Remaining")]).toEqual(["10", "9"]);
    const unauthenticated = await call("/account/api-keys", { ip });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("RateLimit-Remaining")).toBe("8");
    const key = await newKey();
    const notFound = await signedCall(key, "GET", "/v1/orderbook?symbol=DOGEUSDT");
    expect(notFound.status).toBe(404);
    expect([notFound.headers.get("RateLimit-Limit"), notFound.headers.get("RateLimit-Remaining")]).toEqual(["30", "29"]);
  });

  it("a failed authentication answers with the client IP's headers", async () => {
    const ip = "203.0.113.55";
    const bad = { id: "mk_000000000000000000000001", secret: "nope" };
    const first = await signedCall(bad, "GET", "/v1/markets", { ip });
    expect(first.status).toBe(401);
    expect([first.headers.get("RateLimit-Limit"), first.headers.get("RateLimit-Remaining")]).toEqual(["10", "9"]);
    const missing = await call("/v1/markets", { ip });
    expect(missing.headers.get("RateLimit-Remaining")).toBe("8");
  });

  it("ingest refused before any key vouched for it (415, 413) counts against the client IP", async () => {
    const ip = "203.0.113.56";
    const publisher = await newPublishKey();
    const send = () => signedCall(publisher, "POST", "/v1/ingest", { ip, body: "symbol=BTCUSDT", headers: { "Content-Type": "text/plain" } });
    const statuses = (await Promise.all(Array.from({ length: 12 }, send))).map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(10).fill(415), 429, 429]);
  });

  it("a gateway is admitted 50 times in a second through admit()", async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 60 }, () => admit(env, "gateway:gw_rate_test", GATEWAY_LIMIT)));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(50);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => o.reason as ProblemError);
    expect(refused).toHaveLength(10);
    for (const error of refused) {
      expect([error.status, error.code]).toEqual([429, "RATE_LIMITED"]);
      expect(error.headers).toMatchObject({ "RateLimit-Limit": "50", "RateLimit-Remaining": "0", "Retry-After": "1" });
      expect(error.extras.retryAfterMs).toBeGreaterThan(0);
    }
  });

  it("gateway callbacks are not under the public per-IP limit", async () => {
    const ip = "203.0.113.57";
    await burst(12, () => call("/api/time", { ip }));
    expect((await call("/api/time", { ip })).status).toBe(429);
    const gateway = await approveGateway("rate test gateway");
    const response = await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rate_1", sequence: 1, status: "pending" }), {
      headers: { "CF-Connecting-IP": ip },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("RateLimit-Limit")).toBe("50");
    expect(Number(response.headers.get("RateLimit-Remaining"))).toBe(49);
  });

  it("a gateway's errors after authentication carry its RateLimit headers too", async () => {
    const gateway = await approveGateway("rate header gateway");
    const body = callbackBody(gateway.id, { settlementId: "stl_rate_2", sequence: 1, status: "pending" });
    const refused = await deliver(gateway, body, { webhookId: "evt_not_the_body_id" });
    expect(refused.status).toBe(400);
    expect(refused.headers.get("RateLimit-Limit")).toBe("50");
    expect(refused.headers.get("RateLimit-Remaining")).toBe("49");
  });

  it("callbacks that fail authentication count against the client IP, never against the gateway they name", async () => {
    const ip = "203.0.113.59";
    const gateway = await approveGateway("rate impostor gateway");
    const forged = (n: number) =>
      deliver(gateway, callbackBody(gateway.id, { settlementId: `stl_forged_${n}`, sequence: 1, status: "pending" }), {
        secret: "whsec_d3Jvbmctc2VjcmV0LWZvci10ZXN0cw==",
        headers: { "CF-Connecting-IP": ip },
      });
    const stranger = { id: "gw_not_approved", secret: "whsec_c3RyYW5nZXItc2VjcmV0LWZvci10ZXN0" };
    const unknown = () =>
      deliver(stranger, callbackBody(stranger.id, { settlementId: "stl_rate_3", sequence: 1, status: "pending" }), { headers: { "CF-Connecting-IP": ip } });
    const noSignature = () =>
      deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rate_4", sequence: 1, status: "pending" }), {
        headers: { "CF-Connecting-IP": ip, "webhook-signature": "" },
      });
    const wrongType = () =>
      deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rate_5", sequence: 1, status: "pending" }), {
        headers: { "CF-Connecting-IP": ip, "Content-Type": "text/plain" },
      });
    const answers: Response[] = [];
    for (let i = 0; i < 7; i++) answers.push(await forged(i));
    answers.push(await unknown(), await noSignature(), await wrongType());
    expect(answers.map((r) => r.status)).toEqual([...Array(9).fill(401), 415]);
    expect(answers.map((r) => r.headers.get("RateLimit-Limit"))).toEqual(Array(10).fill("10"));
    expect(answers.map((r) => Number(r.headers.get("RateLimit-Remaining")))).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const last = await forged(99);
    expect([last.status, last.headers.get("RateLimit-Limit"), last.headers.get("Retry-After")]).toEqual([429, "10", "1"]);
    // The gateway named by the forgeries has spent nothing: its first genuine callback sees 49 left.
    const genuine = await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_rate_genuine", sequence: 1, status: "pending" }));
    expect([genuine.status, genuine.headers.get("RateLimit-Limit"), genuine.headers.get("RateLimit-Remaining")]).toEqual([200, "50", "49"]);
  });

  it("dashboard form posts share the per-IP limit of the account API", async () => {
    const ip = "203.0.113.58";
    const statuses = (await Promise.all(Array.from({ length: 12 }, () => call("/dashboard/logout", { method: "POST", ip, redirect: "manual" }))))
      .map((r) => r.status)
      .sort();
    expect(statuses).toEqual([...Array(10).fill(303), 429, 429]);
  });
});
