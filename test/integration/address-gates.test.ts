import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type AddressGate, GATE_MAX_WINDOWS } from "../../src/access/address-gate";
import { createApp } from "../../src/app";
import { fnv1a } from "../../src/core/fnv";
import { objectCalls } from "../../src/core/object-ids";
import { currentRegistry, ensureRegistry } from "../../src/registry/copy";
import { hostOf } from "../support/registry";

const app = createApp();

describe("address gates (docs/limits.md#address-gates)", () => {
  it(`a gate holds at most ${GATE_MAX_WINDOWS} windows: past them a new address is not counted (the Worker answers 503), one it holds still is, exactly`, async () => {
    await ensureRegistry(env);
    const market = currentRegistry().bySymbol.get("BTCUSDT")!;
    const gate = env.ADDRESS_GATE.getByName("gate:bound-test");
    const result = await runInDurableObject(gate, async (instance: AddressGate) => {
      const now = Date.now();
      for (let i = 0; i < GATE_MAX_WINDOWS; i += 1) instance.admit(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 10, now);
      const held = instance.windowsHeld();
      const stranger = instance.admit("ip:203.0.113.200", 10, now + 10);
      const known = Array.from({ length: 10 }, () => instance.admit("ip:10.0.0.1", 10, now + 20)?.allowed);
      const read = await instance.read("ip:203.0.113.201", 10, market, { kind: "ticker" });
      return { held, stranger, known, read };
    });
    expect(result.held, "windows held").toBe(GATE_MAX_WINDOWS);
    expect(result.stranger, "a new address past the bound").toBeUndefined();
    expect(result.read, "a new address's read past the bound: no admission, no answer").toEqual({ admission: undefined });
    expect(result.known, "an address already held: 9 more of its 10").toEqual([...Array(9).fill(true), false]);
  });

  it("a gate started again (a deploy, a crash) still holds the second before it: its first admission waits until that second has passed (fails before: the windows started again, 20 admitted in one second)", async () => {
    const gate = env.ADDRESS_GATE.getByName("gate:restart-test");
    const principal = "ip:198.51.100.90";
    const first = Date.now();
    const before = [];
    for (let i = 0; i < 10; i++) before.push((await gate.admit(principal, 10))?.allowed);
    expect(before, "the address's ten").toEqual(Array(10).fill(true));
    await evictDurableObject(gate);
    const after = await gate.admit(principal, 10);
    const answeredAt = Date.now();
    // Admitted only when the ten's second has passed, or refused: never eleven within one second.
    expect(after?.allowed === false || answeredAt - first >= 1_000, `the eleventh, admitted ${answeredAt - first} ms after the first`).toBe(true);
  });

  it("a change of ADDRESS_GATES, made with ADDRESS_GATES_FROM, still counts an address's window where the old count put it: no second budget during the rollout (fails before: the new gate admitted what the old one had refused)", async () => {
    // An address the two counts put in different gates.
    const ip = Array.from({ length: 200 }, (_, i) => `198.51.101.${i + 1}`).find((a) => fnv1a(`ip:${a}`) % 32 !== fnv1a(`ip:${a}`) % 3)!;
    const principal = `ip:${ip}`;
    // The old version's isolates took the address's ten of this second at its gate under 32.
    const old = env.ADDRESS_GATE.getByName(`gate:${fnv1a(principal) % 32}`);
    for (let i = 0; i < 10; i++) expect((await old.admit(principal, 10))?.allowed, `admission ${i + 1} under 32 gates`).toBe(true);
    // The new version, with 3 gates and the old count named: the eleventh is refused.
    const response = await app.request("/api/time", { headers: { "CF-Connecting-IP": ip } }, { ...env, ADDRESS_GATES: "3", ADDRESS_GATES_FROM: "32" });
    expect(response.status, "the eleventh in the second, asked under 3 gates").toBe(429);
    // Another address is served, and counted under both counts.
    const other = ip.replace(/\.\d+$/, ".250");
    const fresh = await app.request("/api/time", { headers: { "CF-Connecting-IP": other } }, { ...env, ADDRESS_GATES: "3", ADDRESS_GATES_FROM: "32" });
    expect(fresh.status, "a fresh address under the change").toBe(200);
  });

  it("a host's restart does not fail the gate's next refresh: the broken session's call is asked again on a new one (fails before: no answer, and its reader got an older copy)", async () => {
    await ensureRegistry(env);
    const market = currentRegistry().bySymbol.get("XRPUSDT")!;
    const gate = env.ADDRESS_GATE.getByName("gate:session-test");
    const first = await runInDurableObject(gate, async (instance: AddressGate) => {
      // Sessions kept as deployed (the tests' bindings close them at once).
      (instance as unknown as { env: Env }).env = { ...env, SESSION_IDLE_MS: "600000" };
      return instance.read("ip:198.51.100.120", 10, market, { kind: "ticker" });
    });
    expect(first.answer, "the first read's answer").toBeDefined();
    await runInDurableObject(await hostOf("XRPUSDT"), (_instance: unknown, state: DurableObjectState) => state.abort("restart (test)")).catch(() => undefined);
    const second = await runInDurableObject(gate, (instance: AddressGate) => instance.read("ip:198.51.100.121", 10, market, { kind: "ticker" }));
    expect(second.answer, "the read after the host's restart").toBeDefined();
  });

  it("one IPv6 /64 is one window, however many of its addresses ask: a host there cannot fill a gate's windows by changing its address", async () => {
    const held = async () => {
      let windows = 0;
      for (let n = 0; n < 32; n++)
        windows += await runInDurableObject(env.ADDRESS_GATE.getByName(`gate:${n}`), (instance: AddressGate) => instance.windowsHeld());
      return windows;
    };
    const before = await held();
    for (let i = 0; i < 40; i++) {
      const ip = `2001:db8:7:64:${((i * 7919) & 0xffff).toString(16)}:${i.toString(16)}:${(i * 31).toString(16)}:${(i + 1).toString(16)}`;
      expect([200, 429], ip).toContain((await app.request("/api/time", { headers: { "CF-Connecting-IP": ip } }, env)).status);
    }
    expect((await held()) - before, "windows the 40 addresses of one /64 added over every gate").toBe(1);
  });

  it("a public read's admission and its refresh are one call, its gate's, on the native and the Binance routes, with the gate's RateLimit headers", async () => {
    for (const [i, path] of ["/api/ticker/BTCUSDT", "/api/orderbook/ETHUSDT?depth=20", "/binance/api/v3/klines?symbol=SOLUSDT&interval=1m&limit=5"].entries()) {
      const before = { ...objectCalls };
      const response = await app.request(path, { headers: { "CF-Connecting-IP": `198.51.100.${90 + i}` } }, env);
      expect(response.status, path).toBe(200);
      expect([response.headers.get("RateLimit-Limit"), response.headers.get("RateLimit-Remaining")], path).toEqual(["10", "9"]);
      const calls = (["marketReads", "guard", "gate", "gateReads"] as const).map((name) => objectCalls[name] - before[name]);
      expect(calls, `${path}: [market reads, guard calls, gate calls, gate calls that carried a read]`).toEqual([0, 0, 1, 1]);
    }
  });
});
