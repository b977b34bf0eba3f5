import { DurableObject } from "cloudflare:workers";
import { isolateMetrics, type MetricsHolder } from "./holder";
import { type Metered, ObjectMeter } from "./object-meter";

/**
 * A Durable Object whose storage rows and requests are counted (docs/operations.md#metrics): its
 * `ctx.storage` is the metered one, so every statement of the class and of the stores it hands the
 * storage to is counted without a call site remembering to; the requests are counted by
 * `meterRequests` on the class. The counts go into the isolate's holder, shared by every object
 * the isolate runs (a thousand guards hand on as one), and are handed on after a request once due.
 *
 * @example
 * export class PriceIndex extends MeteredObject {
 *   constructor(ctx: DurableObjectState, env: Env) {
 *     super(ctx, env, "price-index");
 *   }
 * }
 * meterRequests(PriceIndex, ["reportSummaries", "status"]);
 */
export abstract class MeteredObject extends DurableObject<Env> implements Metered {
  readonly meter: ObjectMeter;

  constructor(ctx: DurableObjectState, env: Env, object: string, holder: MetricsHolder = isolateMetrics) {
    super(ctx, env);
    this.meter = new ObjectMeter(object, env, holder);
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

  /** Hands a promise to the runtime past the request (made once: it runs after every request). */
  private readonly keepAlive = (promise: Promise<unknown>) => this.ctx.waitUntil(promise);

  /** After each counted request: the counts are handed on when due. */
  afterRequest(): void {
    this.meter.holder.settle(this.env, this.keepAlive);
  }
}
