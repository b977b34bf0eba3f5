import { runInDurableObject } from "cloudflare:test";

/**
 * Makes a Durable Object class's RPC method throw (on its prototype, which RPC calls: every
 * instance of the class in this isolate) while `during` runs.
 *
 * @example
 * await withFailing(accessGuard(env, "ip:192.0.2.1"), "admit", () => app.request("/api/time"));
 */
export async function withFailing<T>(stub: DurableObjectStub, method: string, during: () => Promise<T>): Promise<T> {
  let restore = () => {};
  await runInDurableObject(stub, (instance: object) => {
    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
    const original = prototype[method];
    prototype[method] = () => {
      throw new Error(`${method} down (test)`);
    };
    restore = () => {
      prototype[method] = original;
    };
  });
  try {
    return await during();
  } finally {
    await runInDurableObject(stub, () => restore());
  }
}
