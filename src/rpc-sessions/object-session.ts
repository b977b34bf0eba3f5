import { RpcTarget } from "cloudflare:workers";
import type { Metered } from "../metrics/object-meter";
import { callInSession } from "../metrics/object-meter";

/**
 * An RPC session into a Durable Object (docs/design.md#rpc-sessions): the object's `openSession`
 * hands one out, and the calls made on it are part of the call that opened it — Cloudflare bills
 * an RPC session as one request, however many calls it carries. A caller that calls an object
 * many times a second (a publisher channel its hosts, a group's relay its shards and the price
 * index) opens one and calls through it (`SessionLink`). Only the methods the object names may be
 * called; each is counted as a `session` request and otherwise runs as its own call does.
 *
 * @example
 * openSession(): ObjectSession<MarketObject> {
 *   return new ObjectSession(this, ["ingestAll"]);
 * }
 */
export class ObjectSession<T extends Metered> extends RpcTarget {
  readonly #object: T;
  readonly #methods: ReadonlySet<string>;

  constructor(object: T, methods: readonly (keyof T & string)[]) {
    super();
    this.#object = object;
    this.#methods = new Set(methods);
  }

  /** Calls one of the object's named methods with `args`. */
  call(method: string, args: unknown[]): unknown {
    if (!this.#methods.has(method)) throw new Error(`${method} is not callable on this session`);
    return callInSession(this.#object, method, args);
  }
}
