import { describe, expect, it } from "vitest";
import { PUBLIC_LIMIT, SIGNED_LIMIT } from "../../src/access/rate-limit";
import { objectCalls } from "../../src/core/object-ids";
import { newKey, signedCall } from "../support/accounts";

// One client's flood of signed requests must not take its key's gate — shared with 1/32 of all
// addresses and keys — for every request it sends (docs/limits.md#key-gates): past its window, each
// isolate refuses it without asking the gate until the window frees.

/** Sends `count` requests one after another; the statuses, the gate calls made and the windows (seconds) the run spanned. */
async function flood(count: number, send: () => Promise<Response>): Promise<{ statuses: number[]; gateCalls: number; windows: number }> {
  const gateBefore = objectCalls.gate;
  const started = Date.now();
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await send()).status);
  return { statuses, gateCalls: objectCalls.gate - gateBefore, windows: Math.ceil((Date.now() - started) / 1000) + 1 };
}

describe("a flood of signed requests (docs/limits.md#key-gates)", () => {
  it("past its key's window is refused by the isolate itself: one gate call a window, not one a request (fails before: every request asked the gate)", async () => {
    const key = await newKey({ permissions: ["read"] });
    const { statuses, gateCalls, windows } = await flood(150, () => signedCall(key, "GET", "/v1/markets", { ip: "198.51.100.70" }));
    const admitted = statuses.filter((s) => s === 200).length;
    expect(
      statuses.filter((s) => s !== 200 && s !== 429),
      "nothing but answers and 429s",
    ).toEqual([]);
    expect(admitted, "the key's window admits").toBeGreaterThanOrEqual(SIGNED_LIMIT);
    // Each admission is a gate call; each window adds at most its one refusal.
    expect(gateCalls, `gate calls for ${admitted} admitted of 150 over ${windows} windows`).toBeLessThanOrEqual(admitted + windows);
    // The refusal is the key's: another key from the same address is served.
    const other = await newKey({ permissions: ["read"] });
    expect((await signedCall(other, "GET", "/v1/markets", { ip: "198.51.100.70" })).status, "another key").toBe(200);
  });

  it("of bad signatures from one address is refused by the isolate once the address is over its limit: the key's gate is not asked to check each (fails before: every forgery was checked by the gate)", async () => {
    const key = await newKey({ permissions: ["read"] });
    const forged = "0".repeat(64);
    const { statuses, gateCalls, windows } = await flood(150, () => signedCall(key, "GET", "/v1/markets", { ip: "198.51.100.71", signatureOverride: forged }));
    expect(
      statuses.filter((s) => s !== 401 && s !== 429),
      "nothing but 401s and 429s",
    ).toEqual([]);
    const checked = statuses.filter((s) => s === 401).length;
    expect(checked, "the address's failures counted").toBeLessThanOrEqual(PUBLIC_LIMIT * windows);
    // A forgery checked costs its key's gate and its address's gate a call each; a refusal after it, none.
    expect(gateCalls, `gate calls for ${checked} checked of 150 over ${windows} windows`).toBeLessThanOrEqual(2 * checked + 2 * windows);
    // The key itself, signed rightly from another address, is served.
    expect((await signedCall(key, "GET", "/v1/markets", { ip: "198.51.100.72" })).status, "the key from elsewhere").toBe(200);
  });
});
