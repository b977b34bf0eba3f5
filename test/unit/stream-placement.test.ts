import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GROUP_SIZE } from "../../src/domain/market-config";
import { allShards, groupOfMarkets, groupOfShard, groupShard, placeConnection, shardLayout, shardOf, shardsOfGroup } from "../../src/streams/placement";

const market = (ordinal: number) => ({ ordinal });

describe("placement", () => {
  it("a connection naming markets of one group lands on a shard of that group, whatever the principal", () => {
    const layout = shardLayout({ STREAM_SHARDS: "4", STREAM_GROUP_SHARDS: "3,2:7" });
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: 0, max: 40 }),
        fc.array(fc.integer({ min: 0, max: GROUP_SIZE - 1 }), { minLength: 1, maxLength: 50 }),
        (principal, group, offsets) => {
          const shard = placeConnection(
            layout,
            principal,
            offsets.map((o) => market(group * GROUP_SIZE + o)),
          );
          expect(groupOfShard(shard), `${shard} is not of group ${group}`).toBe(group);
          const index = Number(shard.split("-").at(-1));
          expect(index).toBeLessThan(shardsOfGroup(layout, group));
          expect(allShards(layout, (group + 1) * GROUP_SIZE)).toContain(shard);
        },
      ),
    );
  });

  it("streams spanning groups place by the group most of them are in, the first named on a tie", () => {
    expect(groupOfMarkets([market(0), market(70), market(71)])).toBe(1);
    expect(groupOfMarkets([market(130), market(0)])).toBe(2);
    expect(groupOfMarkets([])).toBeUndefined();
  });

  it("a group's shards fill evenly over many principals", () => {
    const layout = shardLayout({ STREAM_SHARDS: "4", STREAM_GROUP_SHARDS: "4,1:8" });
    for (const [group, shards] of [
      [0, 4],
      [1, 8],
    ] as const) {
      const counts = new Map<string, number>();
      for (let i = 0; i < 8000; i++) {
        const shard = placeConnection(layout, `ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, [market(group * GROUP_SIZE + 5)]);
        counts.set(shard, (counts.get(shard) ?? 0) + 1);
      }
      expect([...counts.keys()].sort()).toEqual(Array.from({ length: shards }, (_, i) => groupShard(group, i)).sort());
      for (const count of counts.values()) expect(count, `group ${group}: ${[...counts.values()]}`).toBeGreaterThan((8000 / shards) * 0.8);
    }
  });

  it("no market named, or placement by principal: the general pool, one shard per principal", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 64 }), (principal, n) => {
        const byGroup = shardLayout({ STREAM_SHARDS: String(n) });
        const byPrincipal = shardLayout({ STREAM_SHARDS: String(n), STREAM_PLACEMENT: "principal" });
        const shard = placeConnection(byGroup, principal, []);
        expect(shard).toBe(shardOf(principal, n));
        expect(placeConnection(byPrincipal, principal, [market(500)])).toBe(shard);
        const index = Number(shard.slice("shard-".length));
        expect(index).toBeGreaterThanOrEqual(0);
        expect(index).toBeLessThan(n);
      }),
    );
  });

  it("many client IPs spread over the general pool", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const shard = shardOf(`ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 4);
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect(counts.size).toBe(4);
    for (const count of counts.values()) expect(count).toBeGreaterThan(700);
  });

  it("STREAM_SHARDS is a positive integer, else 1; STREAM_GROUP_SHARDS sets every group's count and overrides, and ignores what it cannot read", () => {
    expect(shardLayout({ STREAM_SHARDS: "4" }).shards).toBe(4);
    for (const bad of [undefined, "", "0", "-2", "1.5", "four", "100000"]) expect(shardLayout({ STREAM_SHARDS: bad }).shards).toBe(1);
    expect(shardLayout({ STREAM_SHARDS: "4" }).groupShards, "one shard a group unless configured").toBe(1);
    const layout = shardLayout({ STREAM_SHARDS: "2", STREAM_GROUP_SHARDS: "2, 0:8, 3:5,x:2,4:0,5:,:3,6:1.5" });
    expect(layout.groupShards).toBe(2);
    expect([...layout.groups]).toEqual([
      [0, 8],
      [3, 5],
    ]);
    expect(allShards(layout, 2 * GROUP_SIZE + 1)).toEqual([
      "shard-0",
      "shard-1",
      ...Array.from({ length: 8 }, (_, i) => groupShard(0, i)),
      groupShard(1, 0),
      groupShard(1, 1),
      groupShard(2, 0),
      groupShard(2, 1),
    ]);
    expect(allShards(shardLayout({ STREAM_SHARDS: "2", STREAM_PLACEMENT: "principal" }), 2000)).toEqual(["shard-0", "shard-1"]);
  });
});
