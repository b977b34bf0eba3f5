import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { AccessGuard } from "../../src/access/access-guard";
import { accessGuard } from "../../src/core/object-ids";
import { GROUP_SIZE, groupOf } from "../../src/domain/market-config";
import { ingest } from "../../src/market/ingest";
import type { MarketObject } from "../../src/market/market-object";
import { groupOfShard } from "../../src/streams/placement";
import { until } from "../support/poll";
import { hostOfGroup, listThroughAdmin, registry } from "../support/registry";
import { openSocket, shardOfConnection, upgrade } from "./streams-support";

const rules = { tickSize: "0.01", stepSize: "0.001", minQty: "0.001", maxQty: "1000000", minNotional: "1" };
/** Six groups' worth of markets: P0USDT … */
const COUNT = 6 * GROUP_SIZE;

/** A listed market of each of the first six groups. */
let byGroup: string[] = [];

beforeAll(async () => {
  const assets = Array.from({ length: COUNT }, (_, i) => ({ asset: `P${i}`, name: `Placement ${i}`, decimals: 8 }));
  await listThroughAdmin("/admin/assets", assets);
  await listThroughAdmin(
    "/admin/markets",
    assets.map((a) => ({ base: a.asset, quote: "USDT", ...rules })),
  );
  const markets = (await registry()).listed;
  byGroup = Array.from({ length: 6 }, (_, g) => markets.find((m) => groupOf(m) === g)!.symbol);
}, 60_000);

const leasesOf = (ip: string) => runInDurableObject(accessGuard(env, `ip:${ip}`), (guard: AccessGuard) => guard.connectionsHeld());

describe("placement by market group and connection leases (docs/streams.md#placement, docs/limits.md#stream-connections)", () => {
  it("six connections from one address on markets of six groups: five open on five shards, the sixth is 429 before the upgrade", async () => {
    const ip = "198.51.100.60";
    const open = [];
    for (const symbol of byGroup.slice(0, 5)) open.push(await openSocket(`/api/ws?streams=book.${symbol}`, ip));
    const shards = await Promise.all(byGroup.slice(0, 5).map((symbol) => shardOfConnection(`ip:${ip}`, [symbol])));
    expect(new Set(shards).size, "five different shards").toBe(5);
    expect(shards.map(groupOfShard)).toEqual([0, 1, 2, 3, 4]);
    expect((await leasesOf(ip)).map((l) => l.shard).sort()).toEqual([...shards].sort());

    const sixth = await upgrade(`/api/ws?streams=book.${byGroup[5]}`, ip);
    expect(sixth.status, "refused before the upgrade").toBe(429);
    expect(sixth.webSocket).toBeNull();
    expect(((await sixth.json()) as { code: string }).code).toBe("STREAM_LIMIT");
    // The Binance dialect counts in the same five.
    expect((await upgrade(`/binance/ws/${byGroup[5]!.toLowerCase()}@depth`, ip)).status).toBe(429);

    open[0]!.ws.close();
    await until(async () => (await leasesOf(ip)).length === 4, { what: "the closed connection's lease returned" });
    const again = await openSocket(`/api/ws?streams=book.${byGroup[5]}`, ip);
    expect((await leasesOf(ip)).length).toBe(5);
    for (const s of [...open.slice(1), again]) s.ws.close();
  });

  it("a connection lands on its group's shard; a later SUBSCRIBE to another group works and adds one relay→shard path", async () => {
    const ip = "198.51.100.61";
    const markets = (await registry()).listed;
    const [home, away] = [markets.filter((m) => groupOf(m) === 1)[3]!.symbol, markets.filter((m) => groupOf(m) === 4)[3]!.symbol];
    const socket = await openSocket(`/api/ws?streams=trades.${home}`, ip);
    const shard = await shardOfConnection(`ip:${ip}`, [home]);
    expect(groupOfShard(shard)).toBe(1);
    expect(await runInDurableObject(env.STREAM_HUB.getByName(shard), (_hub, state) => state.getWebSockets().length)).toBe(1);

    socket.ws.send(JSON.stringify({ op: "subscribe", id: 7, streams: [`trades.${away}`] }));
    await until(() => socket.messages.find((m) => m.id === 7), { what: "the cross-group subscribe's ack" });
    expect(socket.messages.find((m) => m.id === 7)).toEqual({ id: 7, result: { streams: [`trades.${home}`, `trades.${away}`] } });
    const relayShards = (group: number, symbol: string) =>
      runInDurableObject(hostOfGroup(group), (host: MarketObject) => [
        ...((host.relay as unknown as { subscribers: Map<string, Set<string>> }).subscribers.get(symbol) ?? []),
      ]);
    expect(await relayShards(4, away), "group 4's relay now calls group 1's shard").toEqual([shard]);
    expect(await relayShards(1, home)).toEqual([shard]);

    await ingest(env, "*", { symbol: away, trades: [{ id: "x-1", price: "1.00", quantity: "1.000", side: "buy", time: Date.now() }] });
    await until(() => socket.messages.find((m) => m.stream === `trades.${away}`), { what: "the other group's trade" });
    socket.ws.close();
  });

  it("a relay calls only the shards that want a changed market, counted", async () => {
    const [a, b] = ["198.51.100.62", "198.51.100.63"];
    const group = 2;
    const markets = (await registry()).listed.filter((m) => groupOf(m) === group);
    const [wanted, other] = [markets[1]!.symbol, markets[2]!.symbol];
    // Two shards of group 2 as configured here would be one; the general pool gives the second one a shard of its own.
    const watching = await openSocket(`/api/ws?streams=trades.${wanted}`, a);
    const elsewhere = await openSocket("/api/ws", b);
    elsewhere.ws.send(JSON.stringify({ op: "subscribe", id: 1, streams: [`trades.${other}`] }));
    await until(() => elsewhere.messages.find((m) => m.id === 1) && watching.messages.length >= 0, { what: "both subscribed" });
    const relay = { flush: () => runInDurableObject(hostOfGroup(group), (host: MarketObject) => host.relay.flush()) };
    await relay.flush();

    const callsTo = () => runInDurableObject(hostOfGroup(group), (host: MarketObject) => new Map(host.relay.callsTo));
    const [watchingShard, otherShard] = [await shardOfConnection(`ip:${a}`, [wanted]), await shardOfConnection(`ip:${b}`)];
    const before = await callsTo();
    for (let i = 0; i < 5; i++)
      await ingest(env, "*", { symbol: wanted, trades: [{ id: `w-${i}`, price: "1.00", quantity: "1.000", side: "buy", time: Date.now() }] });
    await until(() => watching.messages.filter((m) => m.stream === `trades.${wanted}`).length >= 1, { what: "the trades" });
    await relay.flush();
    const after = await callsTo();
    const toWatching = (after.get(watchingShard) ?? 0) - (before.get(watchingShard) ?? 0);
    expect(toWatching, "the watching shard is called").toBeGreaterThanOrEqual(1);
    expect(toWatching, "at most once per market batch here (each ingest is one; ticks gather them)").toBeLessThanOrEqual(5);
    expect((after.get(otherShard) ?? 0) - (before.get(otherShard) ?? 0), "the shard that wants another market of the group is not called").toBe(0);
    expect(
      elsewhere.messages.filter((m) => m.stream),
      "the other shard's subscriber got nothing of it",
    ).toEqual([]);
    watching.ws.close();
    elsewhere.ws.close();
  });

  it("a lease confirmed while a sixth was refused is kept a minute after that confirmation, even if its shard then misses one check", async () => {
    // Fails before the fix: the confirmation was stored only when the lease ids changed, so the
    // leases kept their grant time, and one missed check dropped all five while they were open.
    await runInDurableObject(accessGuard(env, "ip:203.0.113.201"), async (guard: AccessGuard) => {
      const inside = guard as unknown as { askShard: (shard: string, ids: string[]) => Promise<ReadonlySet<string> | undefined> };
      const grantedAt = Date.now() - 61_000;
      const held = ["a", "b", "c", "d", "e"].map((id) => ({ id, shard: "shard-0", at: grantedAt }));
      (guard as unknown as { ctx: DurableObjectState }).ctx.storage.kv.put("connections", held);
      inside.askShard = async (_shard, ids) => new Set(ids);
      expect(await guard.takeConnection("f", "shard-0", 5), "a sixth while five are open").toBe(false);
      inside.askShard = async () => undefined;
      expect(await guard.takeConnection("g", "shard-0", 5), "a seventh after the shard missed one check").toBe(false);
      expect(guard.connectionsHeld().map((l) => l.id)).toEqual(["a", "b", "c", "d", "e"]);
    });
  });

  it("a shard that dies with its connections (a restart closes sockets without a close event) gives its leases back at the next connection", async () => {
    const ip = "198.51.100.64";
    const open = [];
    for (const symbol of byGroup.slice(0, 5)) open.push(await openSocket(`/api/ws?streams=ticker.${symbol}`, ip));
    const dying = await shardOfConnection(`ip:${ip}`, [byGroup[2]!]);
    await evictDurableObject(env.STREAM_HUB.getByName(dying), { webSockets: "close" });
    await open[2]!.closed;
    expect((await leasesOf(ip)).length, "the guard was not told: the shard died").toBe(5);

    const sixth = await openSocket(`/api/ws?streams=ticker.${byGroup[5]}`, ip);
    const leases = await leasesOf(ip);
    expect(leases.length).toBe(5);
    expect(
      leases.map((l) => l.shard),
      "the dead shard's lease is gone",
    ).not.toContain(dying);
    for (const s of [...open, sixth]) s.ws.close();
  });
});
