import { createExecutionContext, evictDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PUBLIC_LIMIT, SIGNED_LIMIT } from "../../src/access/rate-limit";
import { sign, signaturePayload } from "../../src/access/signature";
import { createApp } from "../../src/app";
import { fnv1a } from "../../src/core/fnv";
import { usageLedgerOf } from "../../src/core/object-ids";
import { newAccount, newKey } from "../support/accounts";
import { call } from "../support/http";
import { KeyModel, type Seen, WindowModel } from "./access-model";

/**
 * Model-based tests of the limits and keys (docs/limits.md): random bursts of public and signed
 * requests (forged ones too), keys created and revoked, gates restarted (evicted) and their number
 * changed as a rollout does — requests served by isolates of the old and the new count at once —
 * against the plain model (./access-model.ts): never more than the limit in a second, nothing
 * answered to a key after its revocation was answered, no 5xx.
 *
 * A run signs up an account, so this file takes a quarter of MODEL_RUNS. With a gate's restart
 * wait undone, 100 runs find `[public(1, 1), restartGate(address 1), public(1, 10)]`; with
 * ADDRESS_GATES_FROM ignored, `[changeGates(1), public(0, 3), public(0, 8)]` — both kept as
 * regressions in test/integration/address-gates.test.ts.
 */
const RUNS = Math.max(1, Math.floor(Number((env as unknown as { MODEL_RUNS?: string }).MODEL_RUNS ?? "40") / 4));
const ADDRESSES = 2;
const KEYS = 2;
const app = createApp();

interface World {
  run: number;
  cookie: string;
  keys: KeyModel[];
  addresses: { ip: string; window: WindowModel }[];
  /** Where the signed requests come from (forged ones charge it). */
  signedIp: string;
  gates: { count: number; from?: number; rollout: boolean };
  served: number;
}

let runs = 0;

/** The bindings of the isolate serving the next request: during a rollout, every other one is of the old count. */
function versionOf(world: World): Record<string, string> {
  const quiet = { METRICS_FLUSH_MS: "0", ANALYTICS_WINDOW_MS: "0" };
  world.served += 1;
  const { count, from, rollout } = world.gates;
  if (rollout && from !== undefined && world.served % 2 === 0) return { ...quiet, ADDRESS_GATES: String(from) };
  return { ...quiet, ADDRESS_GATES: String(count), ...(from !== undefined && { ADDRESS_GATES_FROM: String(from) }) };
}

async function served(world: World, path: string, headers: Record<string, string>): Promise<Seen> {
  const ctx = createExecutionContext();
  const sentAt = Date.now();
  const response = await app.request(path, { headers }, { ...env, ...versionOf(world) }, ctx);
  await response.arrayBuffer();
  const answeredAt = Date.now();
  await waitOnExecutionContext(ctx);
  return { sentAt, answeredAt, status: response.status };
}

async function signedHeaders(key: KeyModel, forged: boolean, ip: string): Promise<Record<string, string>> {
  const timestamp = Date.now();
  const signature = forged ? "0".repeat(64) : await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: "/v1/markets", body: "" }));
  return { "X-API-KEY": key.id, "X-TIMESTAMP": String(timestamp), "X-SIGNATURE": signature, "CF-Connecting-IP": ip };
}

type Command = fc.AsyncCommand<object, World>;
const command = (name: string, run: (world: World) => Promise<void>): Command => ({
  check: () => true,
  run: async (_model, world) => run(world),
  toString: () => name,
});

/** The gate `principal` is counted in under `count` gates (a key's: its ledger's, whatever the count). */
function gateOf(principal: string, count: number): string {
  return principal.startsWith("key:") ? `gate:${usageLedgerOf(principal.slice(4))}` : `gate:${fnv1a(principal) % count}`;
}

const commandList = [
  fc.tuple(fc.integer({ min: 0, max: ADDRESSES - 1 }), fc.integer({ min: 1, max: 14 })).map(([a, n]) =>
    command(`public(${a}, ${n})`, async (world) => {
      const { ip, window } = world.addresses[a]!;
      const answers = await Promise.all(Array.from({ length: n }, () => served(world, "/api/time", { "CF-Connecting-IP": ip })));
      for (const seen of answers) {
        expect([200, 429], `address ${a}'s answer`).toContain(seen.status);
        expect(window.record(seen), "the address's window").toBeUndefined();
      }
    }),
  ),
  fc.tuple(fc.integer({ min: 0, max: KEYS - 1 }), fc.integer({ min: 1, max: 35 }), fc.boolean()).map(([k, n, forged]) =>
    command(`signed(${k}, ${n}${forged ? ", forged" : ""})`, async (world) => {
      const key = world.keys[k];
      if (!key) return;
      const answers = await Promise.all(Array.from({ length: n }, async () => served(world, "/v1/markets", await signedHeaders(key, forged, world.signedIp))));
      for (const seen of answers) expect(key.answer(seen, forged), "the key's answer").toBeUndefined();
    }),
  ),
  fc.constant(
    command("createKey", async (world) => {
      if (world.keys.length >= KEYS) return;
      const key = await newKey({ cookie: world.cookie });
      world.keys.push(new KeyModel(key.id, key.secret, SIGNED_LIMIT));
    }),
  ),
  fc.integer({ min: 0, max: KEYS - 1 }).map((k) =>
    command(`revoke(${k})`, async (world) => {
      const key = world.keys[k];
      if (!key) return;
      const response = await call(`/account/api-keys/${key.id}`, { method: "DELETE", headers: { Cookie: world.cookie } });
      expect(key.revokedAt === undefined ? [204] : [204, 404], `the revocation of key ${k}`).toContain(response.status);
      if (key.revokedAt === undefined) key.revokedAt = Date.now();
    }),
  ),
  fc.tuple(fc.boolean(), fc.integer({ min: 0, max: Math.max(ADDRESSES, KEYS) - 1 })).map(([ofKey, i]) =>
    command(`restartGate(${ofKey ? `key ${i}` : `address ${i}`})`, async (world) => {
      const principal = ofKey ? world.keys[i] && `key:${world.keys[i]!.id}` : `ip:${world.addresses[i % ADDRESSES]!.ip}`;
      if (!principal) return;
      // A gate not running has nothing to forget.
      await evictDurableObject(env.ADDRESS_GATE.getByName(gateOf(principal, world.gates.count))).catch((error: unknown) => {
        if (!String(error).includes("not currently running")) throw error;
      });
    }),
  ),
  fc.constantFrom(1, 3, 7, 32).map((to) =>
    command(`changeGates(${to})`, async (world) => {
      // One change at a time, as docs/limits.md says: the first deploy names the old count.
      if (world.gates.from !== undefined || to === world.gates.count) return;
      world.gates = { count: to, from: world.gates.count, rollout: true };
    }),
  ),
  fc.constant(
    command("rolloutDone", async (world) => {
      world.gates.rollout = false;
    }),
  ),
];

/** Bursts and restarts twice as often as the rest: a limit is broken, if at all, by a burst around a restart or a change. */
const commands = [...commandList, commandList[0]!, commandList[1]!, commandList[4]!];

describe("the limits and keys against their model (test/model/access-model.ts)", () => {
  it(`${RUNS} runs of random commands: never past a limit, nothing after a revocation, no 5xx`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 25 }), async (cmds) => {
        runs += 1;
        // Each run (a shrink's too) has its own account, keys and addresses: windows of earlier runs are no one's.
        const { cookie } = await newAccount(`10.86.${runs % 250}.1`);
        const world: World = {
          run: runs,
          cookie,
          keys: [],
          addresses: Array.from({ length: ADDRESSES }, (_, a) => {
            const ip = `10.87.${runs % 250}.${a + 1}`;
            return { ip, window: new WindowModel(`address ${ip}`, PUBLIC_LIMIT) };
          }),
          signedIp: `10.88.${runs % 250}.1`,
          gates: { count: 32, rollout: false },
          served: 0,
        };
        await fc.asyncModelRun(() => ({ model: {}, real: world }), cmds);
      }),
      { numRuns: RUNS, verbose: 1 },
    );
  });
});
