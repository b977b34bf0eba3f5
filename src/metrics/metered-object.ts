import { DurableObject } from "cloudflare:workers";
import { MetricsHolder } from "./holder";
import { type Metered, ObjectMeter } from "./object-meter";

/**
 * A Durable Object whose storage rows and requests are counted (docs/operations.md#metrics): its
 * `ctx.storage` is the metered one, so every statement of the class and of the stores it hands the
 * storage to is counted without a call site remembering to; the requests are counted by
 * `meterRequests` on the class. The counts go with the object's other counts in `metrics`, and are
 * handed on after a request once due (an object that falls quiet hands on at its next request).
 *
 * @example
 * export class GroupRelay extends MeteredObject {
 *   constructor(ctx: DurableObjectState, env: Env) {
 *     super(ctx, env, "relay");
 *   }
 * }
 * meterRequests(GroupRelay, ["relay", "flush"]);
 */
export abstract class MeteredObject extends DurableObject<Env> implements Metered {
  readonly meter: ObjectMeter;
  protected readonly metrics = new MetricsHolder();

  constructor(ctx: DurableObjectState, env: Env, object: string) {
    super(ctx, env);
    this.meter = new ObjectMeter(object, env, this.metrics);
    const storage = this.meter.storage(ctx.storage);
    if (storage !== ctx.storage) {
      this.ctx = new Proxy(ctx as typeof this.ctx, {
        get: (target, prop) => {
          if (prop === "storage") return storage;
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    }
  }

  /** After each counted request: the counts are handed on when due. */
  afterRequest(): void {
    this.metrics.settle(this.env, (promise) => this.ctx.waitUntil(promise));
  }
}
