import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromBase64 } from "../../src/core/encoding";
import {
  isTimestampFresh,
  MAX_SIGNATURES,
  newGatewaySecret,
  parseSignatureHeader,
  signedContent,
  signWebhook,
  verifyWebhook,
} from "../../src/settlements/webhook-signature";
import vectors from "../fixtures/signing-vectors.json";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (content: Uint8Array) => new TextDecoder().decode(content);
const SECRET_A = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3";

describe("Standard Webhooks signatures (docs/settlements.md)", () => {
  it("every webhook vector: signed content, signature, and verification", async () => {
    expect(vectors.webhookSigning.length).toBeGreaterThan(0);
    for (const v of vectors.webhookSigning) {
      const timestamp = String(v.webhookTimestamp);
      expect(text(signedContent(v.webhookId, timestamp, bytes(v.body)))).toBe(v.signedContent);
      expect(await signWebhook(v.secret, v.webhookId, timestamp, bytes(v.body))).toBe(v.webhookSignature);
      expect(await verifyWebhook([v.secret], v.webhookId, timestamp, bytes(v.body), v.webhookSignature)).toBe(true);
    }
  });

  it("a new secret is whsec_ + base64 of 32 random bytes, never the same twice", () => {
    const secrets = Array.from({ length: 20 }, newGatewaySecret);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(fromBase64(secret.slice(6))).toHaveLength(32);
    }
    expect(new Set(secrets).size).toBe(secrets.length);
  });

  it("the header is a space-separated list; only well-formed v1 entries count, at most MAX_SIGNATURES of them", () => {
    const sig = "l8X1h3dHy7/0Kmt9EBXxggPzfCKYT23exiC4VfKs0XY=";
    expect(parseSignatureHeader(`v1,${sig}`)).toHaveLength(1);
    expect(parseSignatureHeader(`  v1,${sig}   v1,${sig}  `)).toHaveLength(2);
    expect(parseSignatureHeader(`v1a,${sig} v2,${sig} v1,short= v1, v1 ${sig}`)).toHaveLength(0);
    expect(parseSignatureHeader("")).toHaveLength(0);
    expect(parseSignatureHeader(Array.from({ length: MAX_SIGNATURES + 5 }, () => `v1,${sig}`).join(" "))).toHaveLength(MAX_SIGNATURES);
  });

  it("either of two active secrets passes; a secret not in the active list fails", async () => {
    const secretB = newGatewaySecret();
    const retired = newGatewaySecret();
    const body = bytes('{"id":"evt_9"}');
    for (const signer of [SECRET_A, secretB]) {
      const header = await signWebhook(signer, "evt_9", "1763800000", body);
      expect(await verifyWebhook([SECRET_A, secretB], "evt_9", "1763800000", body, header)).toBe(true);
    }
    const byRetired = await signWebhook(retired, "evt_9", "1763800000", body);
    expect(await verifyWebhook([SECRET_A, secretB], "evt_9", "1763800000", body, byRetired)).toBe(false);
    // A gateway in rotation sends both signatures; one matching is enough.
    expect(await verifyWebhook([secretB], "evt_9", "1763800000", body, `${byRetired} ${await signWebhook(secretB, "evt_9", "1763800000", body)}`)).toBe(true);
  });

  it("the raw bytes are signed: the same JSON re-serialized with other whitespace fails", async () => {
    const v = vectors.webhookSigning[0]!;
    const reserialized = JSON.stringify(JSON.parse(v.body), null, 1);
    expect(JSON.parse(reserialized)).toEqual(JSON.parse(v.body));
    expect(await verifyWebhook([v.secret], v.webhookId, String(v.webhookTimestamp), bytes(reserialized), v.webhookSignature)).toBe(false);
    expect(await verifyWebhook([v.secret], v.webhookId, String(v.webhookTimestamp + 1), bytes(v.body), v.webhookSignature)).toBe(false);
    expect(await verifyWebhook([v.secret], "evt_2", String(v.webhookTimestamp), bytes(v.body), v.webhookSignature)).toBe(false);
  });

  it("any change of one byte of the body, id or timestamp breaks the signature", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.nat(), fc.integer({ min: 1, max: 255 }), async (body, at, flip) => {
        const header = await signWebhook(SECRET_A, "evt_p", "1763800000", body);
        expect(await verifyWebhook([SECRET_A], "evt_p", "1763800000", body, header)).toBe(true);
        const changed = body.slice();
        changed[at % body.length]! ^= flip;
        expect(await verifyWebhook([SECRET_A], "evt_p", "1763800000", changed, header)).toBe(false);
      }),
      { numRuns: 50 },
    );
  });

  it("timestamps within ±300 s of the server's clock pass; ±301 s fail", () => {
    const nowMs = 1_763_800_000_999; // late in its second: the comparison is in whole seconds
    const now = 1_763_800_000;
    for (const offset of [0, 1, -1, 299, -299, 300, -300]) expect(isTimestampFresh(now + offset, nowMs), String(offset)).toBe(true);
    for (const offset of [301, -301, 10_000, -now]) expect(isTimestampFresh(now + offset, nowMs), String(offset)).toBe(false);
  });
});
