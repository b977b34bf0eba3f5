import { groupOf } from "../core/market-groups";
import { marketObject } from "../core/object-ids";
import { withTimeout } from "../core/time-limit";
import type { MarketObject } from "../market/market-object";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import type { MarketAnswer, MarketQuestion } from "../reads/edge-copies";
import type { MarketConfig } from "../registry/model";
import { SessionLink, sessionIdleMs } from "../sessions/session-link";
import { type LeaseOptions, PrincipalWindows } from "./principal-windows";
import type { LeasedAdmission } from "./sliding-window";

/**
 * Windows one gate holds at most (under 1 KB each, 10 slots at most): a window lives about a second
 * past its last admission, so this is far above the admissions a second one object decides
 * (docs/limits.md#address-gates).
 */
export const GATE_MAX_WINDOWS = 20_000;
/**
 * How long a gate waits for a market's answer before it answers with the admission alone: within
 * the reader's own 2 s (MARKET_TIMEOUT_MS), so a slow host delays the read's admission no more than
 * it delays its refresh, and the read still ends in a stale copy or 503, never a hang.
 */
export const GATE_HOST_WAIT_MS = 1_500;

/** A gate's word on one request; `undefined` admission: no window could be held (503, fail closed). */
export interface GatedRead {
  admission: LeasedAdmission | undefined;
  /** The market's answer, when the request was admitted and its host answered. */
  answer?: MarketAnswer;
}

/**
 * One of `ADDRESS_GATES` objects, named by a hash of the client address (docs/limits.md#address-gates):
 * it counts the public limit of the addresses hashed to it, exactly (each its own window), and
 * carries their market reads. A public read's one object call — the exact limit's, which every
 * request makes — comes here, and when the read's edge copy is old the gate asks the market's host
 * through an RPC session it keeps open (calls on it are not billed), so the refresh rides on the
 * call the limit already made. The sessions keep a busy gate from hibernating: its duration is the
 * price of the refreshes it carries (docs/capacity.md#the-whole-bill).
 */
export class AddressGate extends MeteredObject {
  private readonly windows = new PrincipalWindows(GATE_MAX_WINDOWS);
  /** One session a market host (`group:<n>`), opened on the first read of one of its markets. */
  private readonly hosts = new Map<number, SessionLink<MarketObject>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "gate");
  }

  /** Rate admission of `principal` only (a request that reads no market copy, or whose copy is fresh). */
  admit(principal: string, limit: number, now = Date.now(), options: LeaseOptions = {}): LeasedAdmission | undefined {
    return this.windows.admit(principal, limit, now, options);
  }

  /**
   * Admits one request of `principal` and, if admitted, answers its market question from the
   * market's host. A host that fails or is slow leaves the admission standing and the answer out:
   * the reader serves a recent copy or 503, as for any failed refresh.
   */
  async read(principal: string, limit: number, options: LeaseOptions, market: MarketConfig, question: MarketQuestion): Promise<GatedRead> {
    const admission = this.windows.admit(principal, limit, Date.now(), options);
    if (!admission?.allowed) return { admission };
    try {
      return { admission, answer: await withTimeout(this.hostOf(market).call("answer", market, question), GATE_HOST_WAIT_MS) };
    } catch (error) {
      console.error("gate: market host did not answer", market.symbol, String(error));
      return { admission };
    }
  }

  private hostOf(market: MarketConfig): SessionLink<MarketObject> {
    const group = groupOf(market);
    let link = this.hosts.get(group);
    if (!link) this.hosts.set(group, (link = new SessionLink<MarketObject>(() => marketObject(this.env, market).openSession(), sessionIdleMs(this.env))));
    return link;
  }

  /** Windows held now (the operator's view, and the tests'). */
  windowsHeld(): number {
    return this.windows.size;
  }
}

meterRequests(AddressGate, ["admit", "read", "windowsHeld"]);
