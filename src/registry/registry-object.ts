import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { readRegistry } from "./store";

/** A registry published longer ago than this is read again from D1 on the next ask (a lost publish heals). */
const RELOAD_EVERY_MS = 60_000;

/** What an isolate holds of the registry: which publication, and its JSON text. */
export interface RegistryText {
  /** New each time this object starts: a copy from another start is never taken for current. */
  epoch: string;
  version: number;
  /** A `RegistrySnapshot` as JSON. */
  text: string;
}

/**
 * Publishes the registry (D1 is its system of record) to every isolate as ready text: each
 * isolate asks at most once per `REGISTRY_REFRESH_MS` whether its copy is current, and is sent the
 * text only when it is not. One instance; its calls grow with isolates, not with markets.
 */
export class Registry extends MeteredObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "registry");
  }

  private current: RegistryText | undefined;
  private loadedAt = 0;
  private readonly epoch = crypto.randomUUID();

  private async load(): Promise<RegistryText> {
    const snapshot = await readRegistry(this.env.DB);
    this.current = { epoch: this.epoch, version: snapshot.version, text: JSON.stringify(snapshot) };
    this.loadedAt = Date.now();
    return this.current;
  }

  /** The registry if the caller's copy (`epoch`, `version`) is not the current one, else null. */
  async since(epoch: string, version: number): Promise<RegistryText | null> {
    const current = this.current && Date.now() - this.loadedAt < RELOAD_EVERY_MS ? this.current : await this.load();
    return current.epoch === epoch && current.version === version ? null : current;
  }

  /** Reads D1 again after a change the operator API has committed, and returns the new publication. */
  async reload(): Promise<RegistryText> {
    return this.load();
  }
}

meterRequests(Registry, ["since", "reload"]);
