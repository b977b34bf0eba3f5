import { fnv1a } from "./fnv";
import { groupOf } from "./market-groups";
import { intSetting } from "./settings";

/**
 * Durable Object ids by name, kept per isolate: deriving an id hashes the name, which costs
 * more than the rest of a cheap call. Bounded, so a flood of new names cannot grow it forever.
 * Stubs are not kept: a stub belongs to the request that made it.
 */
const MAX_IDS_PER_NAMESPACE = 10_000;
// biome-ignore lint/suspicious/noExplicitAny: one map for namespaces of every object class
const cache = new WeakMap<DurableObjectNamespace<any>, Map<string, DurableObjectId>>();

export function stubByName<T extends Rpc.DurableObjectBranded | undefined>(namespace: DurableObjectNamespace<T>, name: string): DurableObjectStub<T> {
  let ids = cache.get(namespace);
  if (!ids) cache.set(namespace, (ids = new Map()));
  let id = ids.get(name);
  if (!id) {
    if (ids.size >= MAX_IDS_PER_NAMESPACE) ids.clear();
    ids.set(name, (id = namespace.idFromName(name)));
  }
  return namespace.get(id);
}

/*
 * One helper per Durable Object namespace: how each object is named lives here and only here.
 */

/**
 * Calls this isolate has made to the market objects and to the guards, counted where the stubs
 * are made (one stub, one call): what the edge read path saves is measured, not estimated.
 * `marketReads` is the part of `market` that the read path made, `ingest` the batches applied;
 * `gate` the calls to address gates, `gateReads` the part of them that carried a market read;
 * `venueReads` the part of `priceIndex` that the all-market reads made. Locally every object runs
 * in the one isolate, so these count the calls into the price index and the
 * shards too (docs/benchmarks.md).
 */
export const objectCalls = {
  market: 0,
  marketReads: 0,
  ingest: 0,
  guard: 0,
  gate: 0,
  gateReads: 0,
  priceIndex: 0,
  venueReads: 0,
  shard: 0,
  registry: 0,
  metrics: 0,
  usageLedger: 0,
};

/**
 * The object hosting a market's engine: its group's (docs/design.md#market-hosts), named by the
 * group, which the market's listing order gives.
 */
export function marketObject(env: Env, market: { ordinal: number }) {
  objectCalls.market += 1;
  return stubByName(env.MARKET, `group:${groupOf(market)}`);
}

/** The guard of one principal: `ip:…`, `key:…`, `gateway:…`, `login:…`. */
export function accessGuard(env: Env, principal: string) {
  objectCalls.guard += 1;
  return stubByName(env.ACCESS_GUARD, principal);
}
/**
 * How many address gates count the public limit (docs/limits.md#address-gates), by a hash of the
 * address, unless ADDRESS_GATES says otherwise. Changing it moves addresses between gates: at most
 * a second of their counts is forgotten.
 */
const ADDRESS_GATES = 32;
/** The gate counting `principal`'s public limit (`ip:<addr>`) and carrying its market reads. */
export function addressGate(env: Env, principal: string) {
  return gateAt(env, fnv1a(principal));
}
/**
 * The gate the previous count put `principal` in while a change of ADDRESS_GATES rolls out
 * (`ADDRESS_GATES_FROM` names the old count), when that is not its gate now: isolates of the new
 * count ask it first, so those of both counts count the address in one window, exactly
 * (docs/limits.md#address-gates). Undefined otherwise.
 */
export function formerAddressGate(env: Env, principal: string) {
  const from = intSetting((env as { ADDRESS_GATES_FROM?: string }).ADDRESS_GATES_FROM, 1, 1_024, 0);
  const n = fnv1a(principal);
  if (from === 0 || n % from === n % gateCount(env)) return undefined;
  return gateAt(env, n, from);
}
function gateCount(env: Env): number {
  return intSetting(env.ADDRESS_GATES, 1, 1_024, ADDRESS_GATES);
}
/** Gate number `n` modulo the number deployed (ADDRESS_GATES), or `gates`. */
function gateAt(env: Env, n: number, gates = gateCount(env)) {
  objectCalls.gate += 1;
  return stubByName(env.ADDRESS_GATE, `gate:${n % gates}`);
}
/** How many ledgers share the keys' usage, by a hash of the key id. Fixed: a key's buckets live in its ledger. */
const USAGE_LEDGERS = 32;
/** The number of the ledger counting `keyId`'s usage. */
export function usageLedgerOf(keyId: string): number {
  return fnv1a(keyId) % USAGE_LEDGERS;
}
/** The ledger counting `keyId`'s usage (docs/limits.md#your-keys-usage). */
export function keyUsageLedger(env: Env, keyId: string) {
  return keyUsageLedgerAt(env, usageLedgerOf(keyId));
}
/** The ledger numbered `ledger` (a gate hands over the usage of all its keys of one ledger at once). */
export function keyUsageLedgerAt(env: Env, ledger: number) {
  objectCalls.usageLedger += 1;
  return stubByName(env.KEY_USAGE, `usage:${ledger}`);
}
/**
 * The gate checking and counting an account key's requests (docs/limits.md#key-gates): named by its
 * ledger's number, so each ledger hears from one gate only — a gate's hand-over of its keys' usage
 * is one call a ledger, whatever the number of keys.
 */
export function keyGate(env: Env, keyId: string) {
  // Named by the ledger alone, whatever ADDRESS_GATES says: a key's record never moves gate, so a
  // revocation told to it holds for every isolate, of any version, during a change or a rollout.
  objectCalls.gate += 1;
  return stubByName(env.ADDRESS_GATE, `gate:${usageLedgerOf(keyId)}`);
}
/** A WebSocket shard, named by its shard id. */
export function streamHub(env: Env, shard: string) {
  objectCalls.shard += 1;
  return stubByName(env.STREAM_HUB, shard);
}
/** The one holder of the operator metrics' totals (docs/operations.md#metrics). */
export function metricsObject(env: Env) {
  objectCalls.metrics += 1;
  return stubByName(env.METRICS_TOTALS, "global");
}
/** The one price index, which also holds the all-market answers. */
export function priceIndex(env: Env) {
  objectCalls.priceIndex += 1;
  return stubByName(env.PRICE_INDEX, "global");
}
/** A key's publisher channel (`key:…`): holds its `GET /v1/publish` connections. */
export const publishChannel = (env: Env, principal: string) => stubByName(env.PUBLISH_CHANNEL, principal);
/** The registry's one publisher. */
export function registryObject(env: Env) {
  objectCalls.registry += 1;
  return stubByName(env.REGISTRY, "registry");
}
/** The one demo feed. */
export const demoFeed = (env: Env) => stubByName(env.DEMO_FEED_OBJECT, "demo");
