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
