import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { importSecret, isOnTime, requestTargetOf, sign, signaturePayload, verifySignature } from "../../src/access/signature";
import vectors from "../fixtures/signing-vectors.json";

describe("request signing (docs/signing.md)", () => {
  it.each(vectors.requestSigning)("matches the documented vector for $method $requestTarget", async (vector) => {
    const payload = signaturePayload({ timestamp: vector.timestamp, method: vector.method, requestTarget: vector.requestTarget, body: vector.body });
    expect(payload).toBe(vector.payload);
    expect(await sign(vector.secret, payload)).toBe(vector.signature);
    const key = await importSecret(vector.secret);
    expect(await verifySignature(key, payload, vector.signature)).toBe(true);
    expect(await verifySignature(key, payload, vector.signature.toUpperCase())).toBe(true);
  });

  const request = fc.record({
    secret: fc.string({ minLength: 1, maxLength: 48 }),
    timestamp: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    method: fc.constantFrom("GET", "POST", "DELETE"),
    target: fc.stringMatching(/^\/v1\/[a-z0-9/]{0,20}(\?[a-zA-Z0-9=&%._-]{0,40})?$/),
    body: fc.string({ maxLength: 200 }),
  });

  it("any change to timestamp, method, path, query or body invalidates a signature", async () => {
    await fc.assert(
      fc.asyncProperty(request, fc.nat(4), fc.string({ minLength: 1, maxLength: 3 }), async (r, field, extra) => {
        const key = await importSecret(r.secret);
        const signature = await sign(r.secret, signaturePayload({ timestamp: r.timestamp, method: r.method, requestTarget: r.target, body: r.body }));
        expect(
          await verifySignature(key, signaturePayload({ timestamp: r.timestamp, method: r.method, requestTarget: r.target, body: r.body }), signature),
        ).toBe(true);
        const changed = [
          signaturePayload({ timestamp: r.timestamp + 1, method: r.method, requestTarget: r.target, body: r.body }),
          signaturePayload({ timestamp: r.timestamp, method: r.method === "GET" ? "POST" : "GET", requestTarget: r.target, body: r.body }),
          signaturePayload({
            timestamp: r.timestamp,
            method: r.method,
            requestTarget: `${r.target.split("?")[0]}x${r.target.includes("?") ? `?${r.target.split("?")[1]}` : ""}`,
            body: r.body,
          }),
          signaturePayload({
            timestamp: r.timestamp,
            method: r.method,
            requestTarget: r.target.includes("?") ? `${r.target}&${extra}` : `${r.target}?${extra}`,
            body: r.body,
          }),
          signaturePayload({ timestamp: r.timestamp, method: r.method, requestTarget: r.target, body: r.body + extra }),
        ][field]!;
        expect(await verifySignature(key, changed, signature)).toBe(false);
      }),
      { numRuns: 80 },
    );
  });

  it("uppercase and lowercase hex both verify; anything else does not", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const payload = signaturePayload({ timestamp: r.timestamp, method: r.method, requestTarget: r.target, body: r.body });
        const key = await importSecret(r.secret);
        const signature = await sign(r.secret, payload);
        expect(await verifySignature(key, payload, signature.toUpperCase())).toBe(true);
        expect(await verifySignature(key, payload, signature)).toBe(true);
        expect(await verifySignature(key, payload, signature.slice(1))).toBe(false);
        expect(await verifySignature(key, payload, `${signature.slice(0, 63)}g`)).toBe(false);
      }),
      { numRuns: 40 },
    );
  });

  it("the window edges serverTime − recvWindow and serverTime + 1000 are inclusive; one millisecond beyond is refused", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_000_000, max: 4_102_444_800_000 }), fc.integer({ min: 1, max: 60_000 }), (serverTime, recvWindow) => {
        expect(isOnTime(serverTime - recvWindow, serverTime, recvWindow)).toBe(true);
        expect(isOnTime(serverTime + 1000, serverTime, recvWindow)).toBe(true);
        expect(isOnTime(serverTime, serverTime, recvWindow)).toBe(true);
        expect(isOnTime(serverTime - recvWindow - 1, serverTime, recvWindow)).toBe(false);
        expect(isOnTime(serverTime + 1001, serverTime, recvWindow)).toBe(false);
      }),
    );
  });

  it("the request target is the path and query exactly as sent", () => {
    expect(requestTargetOf("https://api.example/v1/ticker/24hr?symbol=BTCUSDT&x=%2F")).toBe("/v1/ticker/24hr?symbol=BTCUSDT&x=%2F");
    expect(requestTargetOf("http://127.0.0.1:8787/v1/markets")).toBe("/v1/markets");
  });
});
