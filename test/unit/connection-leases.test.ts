import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ConnectionLease, decideLease, keepAlive, MAX_LEASES, returnLease, UNANSWERED_LEASE_MS } from "../../src/access/connection-leases";

const LIMIT = 5;
const SHARDS = ["group-0-shard-0", "group-1-shard-0", "group-2-shard-0", "shard-1"];

type Op =
  | { op: "open"; shard: number }
  | { op: "close"; pick: number; returnLost: boolean }
  | { op: "crash"; shard: number }
  | { op: "unreachable"; shard: number };

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("open" as const), shard: fc.nat(SHARDS.length - 1) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("close" as const), pick: fc.nat(), returnLost: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("crash" as const), shard: fc.nat(SHARDS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unreachable" as const), shard: fc.nat(SHARDS.length - 1) }) },
);

/**
 * One principal's guard and the shards its connections are on, as the service runs them: a shard
 * marks a lease pending, asks the guard, and accepts the socket if granted; a close returns the
 * lease (unless that call is lost); a crash loses a shard's sockets without a word; an
 * unreachable shard fails the guard's next question (its sockets live on). One step is a second.
 */
async function run(ops: Op[]) {
  let held: ConnectionLease[] = [];
  const sockets = new Map(SHARDS.map((s) => [s, new Set<string>()]));
  const pending = new Map(SHARDS.map((s) => [s, new Set<string>()]));
  const unreachable = new Set<string>();
  let n = 0;
  let asks = 0;
  for (const [step, op] of ops.entries()) {
    const live = () => [...sockets.values()].reduce((sum, set) => sum + set.size, 0);
    if (op.op === "open") {
      const shard = SHARDS[op.shard]!;
      const id = `c${n++}`;
      pending.get(shard)!.add(id);
      let unanswered = false;
      const answer = await decideLease(
        () => held,
        { id, shard, at: step * 1000 },
        LIMIT,
        async (holder, ids) => {
          asks += 1;
          if (unreachable.delete(holder)) {
            unanswered = true;
            return undefined;
          }
          return new Set(ids.filter((i) => sockets.get(holder)!.has(i) || pending.get(holder)!.has(i)));
        },
      );
      held = answer.leases;
      pending.get(shard)!.delete(id);
      const before = live();
      if (answer.granted) sockets.get(shard)!.add(id);
      // Below five only while a shard that holds a lease could not say it closed (fail closed, for at most a minute).
      else if (!unanswered) expect(before, `step ${step}: refused with only ${before} connections open`).toBe(LIMIT);
    } else if (op.op === "close") {
      const all = [...sockets].flatMap(([shard, set]) => [...set].map((id) => [shard, id] as const));
      if (all.length === 0) continue;
      const [shard, id] = all[op.pick % all.length]!;
      sockets.get(shard)!.delete(id);
      if (!op.returnLost) held = returnLease(held, id);
    } else if (op.op === "crash") sockets.get(SHARDS[op.shard]!)!.clear();
    else unreachable.add(SHARDS[op.shard]!);
    expect(live(), `step ${step}: more than ${LIMIT} connections open`).toBeLessThanOrEqual(LIMIT);
    expect(held.length, `step ${step}: the guard's record is bounded`).toBeLessThanOrEqual(MAX_LEASES);
  }
  return { asks };
}

describe("connection leases (docs/limits.md#stream-connections)", () => {
  it("a shard that does not answer keeps its leases until a minute after their last confirmation; one that answers has the rest dropped", () => {
    const held: ConnectionLease[] = [
      { id: "a", shard: "s1", at: 0 },
      { id: "b", shard: "s1", at: 30_000 },
      { id: "c", shard: "s2", at: 0 },
      { id: "d", shard: "s2", at: 0 },
      { id: "e", shard: "s3", at: 0 },
    ];
    const kept = keepAlive(
      held,
      new Map([
        ["s1", undefined],
        ["s2", new Set(["c"])],
      ]),
      UNANSWERED_LEASE_MS,
    );
    expect(kept).toEqual([
      { id: "b", shard: "s1", at: 30_000 },
      { id: "c", shard: "s2", at: UNANSWERED_LEASE_MS },
      { id: "e", shard: "s3", at: 0 },
    ]);
  });

  it("exactly five across shards: never a sixth open, never a refusal below five unless a shard did not answer, whatever opens, closes, lost returns, crashes and unanswered questions interleave", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArbitrary, { minLength: 1, maxLength: 80 }), async (ops) => {
        await run(ops);
      }),
      { numRuns: 400 },
    );
  });

  it("a lease costs no question to a shard below the limit: shards are asked only when a connection needs a slot", async () => {
    const { asks } = await run([0, 1, 2, 3, 0].map((shard) => ({ op: "open", shard })));
    expect(asks, "five opens on four shards, none at the limit").toBe(0);
    const crashed = await run([...[0, 1, 2, 3, 0].map((shard): Op => ({ op: "open", shard })), { op: "crash", shard: 0 }, { op: "open", shard: 2 }]);
    expect(crashed.asks, "the sixth asks each of the four shards holding leases once").toBe(4);
  });
});
