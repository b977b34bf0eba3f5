import { describe, expect, it } from "vitest";
import { newKey, signedCall } from "../support/accounts";
import { call } from "../support/http";

async function burst(count: number, send: () => Promise<Response>) {
  const responses = await Promise.all(Array.from({ length: count }, send));
  return { ok: responses.filter((r) => r.status === 200), limited: responses.filter((r) => r.status === 429) };
}

describe("rate limits (contract 5): exact, per IP and per key", () => {
  it("a burst of 50 concurrent public requests from one IP admits exactly 10; the rest get 429 with headers", async () => {
    const { ok, limited } = await burst(50, () => call("/api/time", { ip: "203.0.113.50" }));
    expect(ok).toHaveLength(10);
    expect(limited).toHaveLength(40);
    for (const response of ok) expect(response.headers.get("RateLimit-Limit")).toBe("10");
    expect(ok.map((r) => Number(r.headers.get("RateLimit-Remaining"))).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const refused = limited[0]!;
    expect(refused.headers.get("Content-Type")).toBe("application/problem+json");
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(Number(refused.headers.get("RateLimit-Reset"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { code: string; retryAfterMs: number };
    expect(body.code).toBe("RATE_LIMITED");
    expect(body.retryAfterMs).toBeGreaterThan(0);
    expect(body.retryAfterMs).toBeLessThanOrEqual(1000);
  });

  it("after the window passes, requests are admitted again", async () => {
    const ip = "203.0.113.51";
    await burst(12, () => call("/api/time", { ip }));
    expect((await call("/api/time", { ip })).status).toBe(429);
    await new Promise((resolve) => setTimeout(resolve, 1050));
    expect((await call("/api/time", { ip })).status).toBe(200);
  });

  it("two IPs do not share a budget", async () => {
    const first = await burst(15, () => call("/api/time", { ip: "203.0.113.52" }));
    const second = await burst(15, () => call("/api/time", { ip: "2001:db8::52" }));
    expect(first.ok).toHaveLength(10);
    expect(second.ok).toHaveLength(10);
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
});
