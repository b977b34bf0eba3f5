import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PUT_SLICE_BYTES, putInSlices } from "../../src/history/sliced-put";

const hex = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** `n` bytes that differ from one offset to the next, so a slice out of place shows. */
function bytesOf(n: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

describe("a put sent a slice at a time (src/history/sliced-put.ts)", () => {
  it("any parts, of any sizes around a slice's: the object is their bytes in order, and its SHA-256 is returned", async () => {
    const size = fc.oneof(fc.nat(64), fc.integer({ min: PUT_SLICE_BYTES - 2, max: PUT_SLICE_BYTES + 2 }), fc.nat(3 * PUT_SLICE_BYTES));
    await fc.assert(
      fc.asyncProperty(fc.array(size, { maxLength: 6 }), async (sizes) => {
        const parts = sizes.map((n, i) => bytesOf(n, i));
        const whole = new Uint8Array(sizes.reduce((n, s) => n + s, 0));
        let at = 0;
        for (const part of parts) {
          whole.set(part, at);
          at += part.length;
        }
        const key = "test/sliced-put.bin";
        const sha256 = await putInSlices(env.HISTORY, key, whole.length, {}, async (send) => {
          for (const part of parts) await send(part);
        });
        const stored = new Uint8Array(await (await env.HISTORY.get(key))!.arrayBuffer());
        expect(stored.length, `the length of parts ${sizes}`).toBe(whole.length);
        expect(
          stored.every((b, i) => b === whole[i]),
          `the bytes of parts ${sizes}, in order`,
        ).toBe(true);
        expect(sha256, "the SHA-256 of what was sent").toBe(await hex(whole));
      }),
      { numRuns: 25, seed: 65 },
    );
  }, 120_000);

  it("a body shorter than its length fails the put and stores nothing", async () => {
    const key = "test/sliced-put-short.bin";
    const put = putInSlices(env.HISTORY, key, 2 * PUT_SLICE_BYTES, {}, (send) => send(bytesOf(PUT_SLICE_BYTES, 1)));
    await expect(put, "the put fails").rejects.toThrow();
    expect(await env.HISTORY.head(key), "nothing under the key").toBeNull();
  });
});
